"""The README's Security example is a working server.properties: PLAIN and SCRAM clients authenticate with it."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.testing.ports import free_port
from tests.gateway.clients import Sent, confluent_produce
from tests.gateway.sasl_setup import client_config, create_scram_users
from tests.gateway.server import GatewayProcess

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    text = README.read_text()
    start = text.index("<!-- security example")
    return re.search(r"```properties\n(.*?)```", text[start:], re.DOTALL)[1]


def test_the_readme_security_example_serves_plain_and_scram(tmp_path):
    server = GatewayProcess(tmp_path / "gateway")
    sasl_port = free_port()
    config = tmp_path / "server.properties"
    config.write_text(readme_example().replace("9092", str(server.port)).replace("9093", str(sasl_port)))
    server.options = ("--config", str(config))
    server.start()
    try:
        plain = client_config("confluent-kafka", "PLAIN", "alice", "alice-secret")
        assert confluent_produce(f"127.0.0.1:{sasl_port}", "readme-plain", [Sent(b"p")], **plain) == [0]
        create_scram_users(server, {"SCRAM-SHA-256": ("bob", "bob-secret")}, iterations=8192)
        scram = client_config("confluent-kafka", "SCRAM-SHA-256", "bob", "bob-secret")
        assert confluent_produce(f"127.0.0.1:{sasl_port}", "readme-scram", [Sent(b"s")], **scram) == [0]
    finally:
        server.stop()
