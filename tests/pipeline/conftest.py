"""A local SparkSession, and the real gateway's fixtures, for the pipelines' tests."""

from tests.gateway.conftest import gateway  # noqa: F401
from tests.pipeline.spark_session import spark  # noqa: F401
