"""The watcher service."""
