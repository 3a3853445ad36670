"""The imperative shell shared by the services: settings, NATS, health, logging, processes."""
