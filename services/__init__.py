"""The four independently deployable services."""
