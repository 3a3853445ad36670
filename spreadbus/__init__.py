"""spreadbus: spread a workload's pods over domains, event-sourced on NATS JetStream."""
