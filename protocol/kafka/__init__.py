"""The Kafka wire protocol: API schemas as data and one generic codec."""
