"""A local SparkSession for the pipelines' tests, on the embedded node or the compose cluster."""

import os
import shutil

import pytest

# Spark's Kafka connector, for the tests that run whole jobs through format("kafka"):
# its jars (spark-sql-kafka-0-10 and its dependencies, comma-separated) or its
# Maven coordinates, which Spark then resolves as `--packages` does.
CONNECTOR = {"spark.jars": os.environ.get("SPARK_KAFKA_JARS", ""),
             "spark.jars.packages": os.environ.get("SPARK_KAFKA_PACKAGES", "")}


@pytest.fixture(scope="session")
def spark():
    sql = pytest.importorskip("pyspark.sql")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime for Spark")
    # Else Spark binds to the machine's outward address, which a sandbox may block:
    # its Python workers then never connect back and the first job hangs.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (sql.SparkSession.builder.master("local[2]").appName("pipeline-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.session.timeZone", "UTC")
               # Spark's 200 shuffle partitions would be 200 tasks per micro-batch on two cores.
               .config("spark.sql.shuffle.partitions", "2")
               # Small test data: adaptive re-planning and C2 compiling only cost time here.
               .config("spark.sql.adaptive.enabled", "false")
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1"))
    for setting, value in CONNECTOR.items():
        if value:
            builder = builder.config(setting, value)
    session = builder.getOrCreate()
    yield session
    session.stop()
