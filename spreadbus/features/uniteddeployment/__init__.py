"""OpenKruise's UnitedDeployment: one workload per subset, the replicas split among them."""
