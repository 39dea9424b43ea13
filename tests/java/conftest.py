"""The real gateway's fixtures, for the Java client's tests."""

from tests.gateway.conftest import gateway  # noqa: F401
from tests.gateway.test_tls import certificates, tls_gateway  # noqa: F401
