"""Karmada's propagation (``policy.karmada.io`` policies, ``work.karmada.io`` bindings) across
member clusters."""
