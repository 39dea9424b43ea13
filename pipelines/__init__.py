"""Data pipelines that run on Spark (PySpark) against the gateway through Spark's Kafka connector."""
