"""spreadbus: spread a workload's pods over zones, node pools and elastic capacity.

It reads OpenKruise's WorkloadSpread, UnitedDeployment and PodUnavailableBudget and Karmada's
WorkloadRebalancer unchanged, and runs as an event-sourced controller on NATS JetStream: every
observation, decision and outcome is an event on a durable log anyone can replay.
"""
