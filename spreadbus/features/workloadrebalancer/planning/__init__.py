"""The WorkloadRebalancer rule over the planner's projection."""
