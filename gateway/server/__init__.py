"""The Kafka listener and the per-connection request loop."""
