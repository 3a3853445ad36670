"""Karmada's WorkloadRebalancer (``apps.karmada.io/v1alpha1``) on spreadbus placements."""
