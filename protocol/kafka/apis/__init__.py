"""One module per Kafka API, each declaring `API`; `ALL` collects them by key."""
