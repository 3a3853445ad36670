"""kubesim: a Kubernetes API server simulator spoken to over real HTTP.

``KubeSim`` serves on the caller's event loop; ``KubeSimThread`` runs one on its own loop for
synchronous callers. ``KubeSim.cluster`` is the in-process :class:`kubesim.interface.Cluster`.
"""

from kubesim.server import KubeSim, KubeSimThread

__all__ = ["KubeSim", "KubeSimThread"]
