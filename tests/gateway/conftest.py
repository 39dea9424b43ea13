"""Fixtures: a real gateway with its embedded mesh, on free ports."""

import pytest

from tests.gateway.server import RUNNING, GatewayProcess

# The embedded stores as processes (the default) and in the gateway's process, for tests that
# should pass both ways: IN_PROCESS gives a test `in_process`, the value of
# --embedded-stores-in-process; STORE_PLACEMENTS gives it `shared_gateway` started so.
_PLACEMENTS = {"store-processes": "false", "stores-in-process": "true"}
IN_PROCESS = pytest.mark.parametrize("in_process", list(_PLACEMENTS.values()), ids=list(_PLACEMENTS))
STORE_PLACEMENTS = pytest.mark.parametrize("shared_gateway",
                                           [("--embedded-stores-in-process", value) for value in _PLACEMENTS.values()],
                                           ids=list(_PLACEMENTS), indirect=True)


@pytest.fixture(autouse=True)
def no_gateway_outlives_its_test():
    """A test that fails before its own stop() would leave its gateway and stores running."""
    before = set(RUNNING)
    yield
    for server in RUNNING - before:
        server.stop()


@pytest.fixture
def gateway(tmp_path):
    server = GatewayProcess(tmp_path / "gateway").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shared_gateway(request, tmp_path_factory):
    """One gateway for a whole test module; tests use topics of their own. Parametrized
    indirectly (STORE_PLACEMENTS), its parameter is the gateway's further options."""
    server = GatewayProcess(tmp_path_factory.mktemp("gateway"), *getattr(request, "param", ())).start()
    yield server
    server.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries the tail of its gateways' logs."""
    report = (yield).get_result()
    if report.failed and call.when == "call":
        for server in item.funcargs.values():
            if isinstance(server, GatewayProcess):
                report.sections.append((f"gateway log {server.bootstrap}", server.log_tail(80)))
