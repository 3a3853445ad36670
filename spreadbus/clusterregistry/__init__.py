"""Member clusters as data: the Cluster kinds a registry holds, how a UnitedDeployment's registry
query finds them, and the status a control plane keeps for each (pure, no I/O)."""
