"""The gateway: a trio Kafka server over a Dafka mesh."""
