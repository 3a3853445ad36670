"""The planner's pure core: folds of the bus streams into state, snapshots, and the rule seam.

Nothing here does I/O, reads a clock or imports NATS or Kubernetes (an import-linter contract
enforces it); time arrives as data in events or as a ``now`` parameter.
"""
