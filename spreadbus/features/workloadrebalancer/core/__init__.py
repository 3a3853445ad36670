"""Pure WorkloadRebalancer rules: the model, validation, the status sync and the TTL."""
