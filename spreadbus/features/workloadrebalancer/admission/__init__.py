"""The WorkloadRebalancer admission handlers: validation of the object alone."""
