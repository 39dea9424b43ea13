"""Dafka store: durable log engine and the store network nodes."""
