"""The propagation policies' validating webhook handlers."""
