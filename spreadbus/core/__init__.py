"""Pure placement rules: no I/O, no clock reads; time is a parameter."""
