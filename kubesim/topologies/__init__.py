"""Shipped cluster topologies (YAML): ``three-zones`` (the default), ``elastic``, ``bench-100``."""
