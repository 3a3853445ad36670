"""One scheduling round of a binding, as Karmada's scheduler decides it."""
