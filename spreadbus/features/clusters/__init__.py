"""The cluster registry: the status of every member cluster's Cluster object in the host."""
