"""The compose cluster, built and started once for the module that uses it."""

import pytest

from tests.compose.cluster import Cluster, compose_tool, image
from tests.mesh.conftest import free_port
from tests.pipeline.spark_session import spark  # noqa: F401


@pytest.fixture(scope="module")
def cluster():
    """compose.yaml's cluster on a free host port, under a project name of its own; every
    container, network and volume of the project is removed afterwards (the image stays)."""
    tag = image()
    started = Cluster(compose_tool(), tag, (free_port(), free_port(), free_port()))
    try:
        started.up()
        yield started
    finally:
        started.down(volumes=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries the tail of the cluster's logs."""
    report = (yield).get_result()
    cluster = item.funcargs.get("cluster")
    if report.failed and call.when == "call" and cluster is not None:
        report.sections.append((f"compose logs {cluster.project}", cluster.logs()))
