"""The pure status of a member cluster."""
