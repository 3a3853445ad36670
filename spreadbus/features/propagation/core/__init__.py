"""Pure propagation rules: the models, validation, cluster selection, replica division and the
general estimator, each a function of its inputs (time and capacities included)."""
