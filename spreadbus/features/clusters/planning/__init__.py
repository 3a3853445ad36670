"""The rule keeping every member cluster's status."""
