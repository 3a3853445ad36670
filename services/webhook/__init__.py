"""The webhook service."""
