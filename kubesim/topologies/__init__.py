"""Shipped cluster topologies (YAML): ``three-zones`` (the default), ``elastic``, ``bench-100``,
``seed-examples`` (the nodes the manifests in ``examples/`` are written for)."""
