"""The cluster registry's offline side: none of its own. A Cluster object is validated by its CRD
schema (``spreadbus validate`` names its unknown fields), and ``spreadbus plan`` reads Cluster
objects for the features that place workloads in member clusters."""
