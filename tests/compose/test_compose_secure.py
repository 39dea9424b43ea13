"""compose.yaml with compose.secure.yaml, secrets made by scripts/compose-secrets.sh: clients on the
host produce and consume over SASL_SSL, a plaintext client and a wrong password get nothing, and the
mesh runs on CURVE (its nodes say so, and the acks=all produce proves the stores took part)."""

import os
import subprocess
import sys

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from tests.compose.cluster import ROOT, Cluster, compose_tool, image
from tests.gateway.clients import CLIENTS, TIMEOUT_S, Sent, same_records
from tests.mesh.conftest import free_port

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def secrets(tmp_path_factory):
    directory = tmp_path_factory.mktemp("compose-secrets") / "secrets"
    subprocess.run(["bash", "scripts/compose-secrets.sh", str(directory)], cwd=ROOT, check=True, timeout=60,
                   env={**os.environ, "PYTHON": sys.executable}, capture_output=True)
    return directory


@pytest.fixture(scope="module")
def secure_cluster(secrets):
    started = Cluster(compose_tool(), image(), (free_port(), free_port(), free_port()),
                      files=("compose.yaml", "compose.secure.yaml"), env={"DAFKA_SECRETS": str(secrets)})
    try:
        started.up()
        yield started
    finally:
        started.down(volumes=True)


def sasl_ssl(client: str, secrets, user: str = "app", password: str | None = None) -> dict:
    password = password or (secrets / f"{user}.password").read_text().strip()
    if client == "confluent-kafka":
        return {"security.protocol": "SASL_SSL", "ssl.ca.location": str(secrets / "ca.pem"),
                "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": password}
    config = {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_plain_username": user,
              "sasl_plain_password": password}
    if client == "aiokafka":
        from aiokafka.helpers import create_ssl_context
        return config | {"ssl_context": create_ssl_context(cafile=str(secrets / "ca.pem"))}
    return config | {"ssl_cafile": str(secrets / "ca.pem")}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_host_client_produces_and_consumes_over_sasl_ssl(secure_cluster, secrets, client):
    produce, consume = CLIENTS[client]
    topic = f"secure-{client}"
    sent = [Sent(b"sealed %d" % n, key=b"k", partition=0) for n in range(5)]
    config = sasl_ssl(client, secrets)
    assert produce(secure_cluster.bootstrap, topic, sent, acks="all", **config) == list(range(5))
    assert same_records(sent, consume(secure_cluster.bootstrap, topic, [0], len(sent), **config))


def cluster_id(bootstrap: str, **config) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000, **config})
    return admin.describe_cluster(request_timeout=10).result(TIMEOUT_S).cluster_id


def test_plaintext_clients_and_wrong_passwords_get_nothing(secure_cluster, secrets):
    assert cluster_id(secure_cluster.bootstrap, **sasl_ssl("confluent-kafka", secrets))
    with pytest.raises(KafkaException):
        cluster_id(secure_cluster.bootstrap)
    with pytest.raises(KafkaException):
        cluster_id(secure_cluster.bootstrap, **sasl_ssl("confluent-kafka", secrets, password="not-it"))


TOWER_PROBE = """
import sys, zmq, zmq.auth
context = zmq.Context()
beacons = context.socket(zmq.SUB)
if sys.argv[1] == "curve":
    public, secret = zmq.auth.load_certificate("/secrets/mesh.key_secret")
    beacons.curve_publickey, beacons.curve_secretkey, beacons.curve_serverkey = public, secret, public
beacons.setsockopt(zmq.SUBSCRIBE, b"W")
beacons.connect("tcp://tower:5557")
sys.exit(0 if beacons.poll(5000) else 3)
"""


def tower_welcomes(cluster: Cluster, secrets, mode: str) -> bool:
    """Whether a peer on the compose network, with the mesh's key or in plaintext, hears the tower."""
    done = subprocess.run(["docker", "run", "--rm", "--network", cluster.network(), "-v", f"{secrets}:/secrets:ro",
                           "--entrypoint", "python3", cluster.image, "-c", TOWER_PROBE, mode],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 3), done.stderr
    return done.returncode == 0


def test_the_mesh_admits_its_key_only(secure_cluster, secrets):
    assert tower_welcomes(secure_cluster, secrets, "curve")
    assert not tower_welcomes(secure_cluster, secrets, "plaintext")
