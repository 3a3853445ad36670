"""Kubernetes semantics shared by the product and its test cluster.

Label selectors, node affinity, taints and tolerations and strategic merge patch, as Kubernetes
defines them. Both spreadbus and kubesim import this package and it imports neither: kubesim is the
oracle the product is tested against, so the rules they share are pinned to Kubernetes' own test
tables (tests/kubesemantics/) rather than to each other.

Deliberately unsupported, and so absent from those tables:

- label selectors: the selector-building API of ``pkg/labels`` (``Add``, ``RequiresExactMatch``,
  requirement equality) and ``metav1.LabelSelectorAsMap``; a lexer of its own is not exposed,
  its tokens are checked through parsing;
- node affinity: errors are not reported. An invalid term matches no node (upstream's lazy
  selector), and an invalid preferred term is skipped where upstream refuses the whole list;
  the API server refuses both before a scheduler sees them;
- tolerations: ``Gt``/``Lt`` tolerations, alpha behind ``TaintTolerationComparisonOperators``
  (off by default), tolerate nothing;
- strategic merge patch: creating patches (two- and three-way diffs, conflicts), and
  ``patchStrategy: replace`` on map fields. Directive keys and nulls inside a value taken
  verbatim are dropped rather than kept for the API server's decoder.
"""
