"""Kubernetes semantics shared by the product and its test cluster.

Label selectors, node affinity, taints and tolerations and strategic merge patch, as Kubernetes
defines them. Both spreadbus and kubesim import this package and it imports neither: kubesim is the
oracle the product is tested against, so the rules they share are pinned to Kubernetes' own test
tables (tests/kubesemantics/) rather than to each other.
"""
