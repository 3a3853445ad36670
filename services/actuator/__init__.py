"""The actuator service."""
