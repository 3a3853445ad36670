"""The admission webhook: serves the registered features' admission handlers, from the bus.

Shape, one module per concern:

- :mod:`service` builds every registered feature's webhook side (its handlers, its fold of the
  observation stream, its conversions) and the one pod view the features that read pods share
  (:mod:`spreadbus.projection.pod_view`), feeds them from one follower, and runs them as
  ``spreadbus webhook`` / ``python -m services.webhook`` (:mod:`cli`);
- :mod:`server` answers the review paths with the handlers the features registered on each
  (a failure policy per path, a latency histogram) and the conversion paths;
  :mod:`review_protocol` is the HTTP/1.1 they are served with; :mod:`certificates` reloads the
  serving certificate when its files change; :mod:`tlsserving.https_site` listens, bounding every
  TLS handshake and aborting those in progress on stop.

What is decided, and from which view of the cluster, is each feature's own (its ``admission/``
package, built by its ``webhook`` module); reading AdmissionReviews and composing the handlers'
answers is the engine's (:mod:`spreadbus.engine.review`, :mod:`spreadbus.engine.admission_chain`).
This package names no feature.
"""
