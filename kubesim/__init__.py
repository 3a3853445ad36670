"""kubesim: a Kubernetes API server simulator spoken to over real HTTP."""
