"""A local SparkSession, and the real gateway's fixtures, for the pipelines' tests."""

import os
import shutil

import pytest

from tests.gateway.conftest import gateway  # noqa: F401

# The Spark Kafka connector's jars (spark-sql-kafka-0-10 and its dependencies),
# comma-separated; the tests that run whole jobs through format("kafka") need them.
CONNECTOR_JARS = os.environ.get("SPARK_KAFKA_JARS", "")


@pytest.fixture(scope="session")
def spark():
    sql = pytest.importorskip("pyspark.sql")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime for Spark")
    builder = (sql.SparkSession.builder.master("local[2]").appName("pipeline-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.sql.session.timeZone", "UTC")
               # Spark's 200 shuffle partitions would be 200 tasks per micro-batch on two cores.
               .config("spark.sql.shuffle.partitions", "2"))
    if CONNECTOR_JARS:
        builder = builder.config("spark.jars", CONNECTOR_JARS)
    session = builder.getOrCreate()
    yield session
    session.stop()
