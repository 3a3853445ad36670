"""The admission webhook: steers new pods into WorkloadSpread subsets, from the bus.

Shape, one module per concern:

- :mod:`review` reads AdmissionReview v1 defensively and builds answers;
- :mod:`server` answers the review paths with a failure policy per path and a latency
  histogram; :mod:`review_protocol` is the HTTP/1.1 they are served with; :mod:`certificates`
  reloads the serving certificate when its files change; :mod:`tlsserving.https_site`
  listens, bounding every TLS handshake and aborting those in progress on stop;
- :mod:`view` is the replica's own projection of the observation stream (no API server call on
  the admission path);
- :mod:`ledger` reserves subset slots on a NATS key-value entry by compare-and-set, so any
  number of replicas never admit more pods to a subset than its limit;
- :mod:`admission` joins them with the placement core's pure decisions, helped by
  :mod:`governing_spread` (the spread governing a pod, waiting briefly for its owner),
  :mod:`reservation_tally` (subset counts carried through a batch of decisions),
  :mod:`ledger_transactions` (a ledger transaction that lets the view catch up first),
  :mod:`view_progress` (waiting for the view to reach a stream position),
  :mod:`spread_hints` (replicas telling each other of WorkloadSpreads they allowed) and
  :mod:`announcements` (the audit events, published in the background);
- :mod:`conversion` converts WorkloadSpreads between ``v1alpha1`` and ``v1beta1``;
- :mod:`service` and :mod:`cli` run it as ``spreadbus webhook`` / ``python -m services.webhook``.

Trade-off: a replica answers from a view that may lag the cluster by the bus latency. The
ledger covers exactly that gap (reservations count until the view observes their pods), and a
replica whose view is behind what the ledger assumes waits for it instead of guessing.
"""
