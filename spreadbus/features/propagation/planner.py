"""What the planner runs of propagation: nothing yet. The scheduling round it will run is
:func:`~.planning.schedule.schedule`, the one ``spreadbus plan`` runs offline."""
