"""Certificates made for a test run: a CA, a server certificate for 127.0.0.1 and localhost,
client certificates, and a CA no one trusts. PEM files in a directory."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID = datetime.timedelta(days=2)


@dataclass(frozen=True)
class Issued:
    """One certificate's files: its key, its certificate, and both in one file (Kafka's PEM keystore)."""

    key: Path
    certificate: Path
    keystore: Path


@dataclass(frozen=True)
class Authority:
    name: x509.Name
    key: ec.EllipticCurvePrivateKey
    certificate: Path


def _name(**attributes: str) -> x509.Name:
    oids = {"C": NameOID.COUNTRY_NAME, "O": NameOID.ORGANIZATION_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
            "CN": NameOID.COMMON_NAME}
    return x509.Name([x509.NameAttribute(oids[kind], value) for kind, value in attributes.items()])


def _builder(subject: x509.Name, issuer: x509.Name, key) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.timezone.utc)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - VALID).not_valid_after(now + VALID))


def _pem_key(key, password: bytes | None = None) -> bytes:
    encryption = (serialization.BestAvailableEncryption(password) if password
                  else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def authority(directory: Path, common_name: str) -> Authority:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(O="Dafka Tests", CN=common_name)
    certificate = (_builder(name, name, key)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    path = directory / f"{common_name}.pem"
    path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return Authority(name, key, path)


def issue(ca: Authority, directory: Path, file_name: str, subject: x509.Name, *, server: bool,
          password: bytes | None = None) -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = _builder(subject, ca.name, key).add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if server:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    certificate = builder.sign(ca.key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
    issued = Issued(directory / f"{file_name}.key", directory / f"{file_name}.crt", directory / f"{file_name}.pem")
    issued.key.write_bytes(_pem_key(key, password))
    issued.certificate.write_bytes(certificate)
    issued.keystore.write_bytes(_pem_key(key, password) + certificate)
    return issued


@dataclass(frozen=True)
class Certificates:
    ca: Path
    server: Issued
    client: Issued  # subject CN=client-1,OU=apps,O=Dafka Tests,C=FR (as Java writes it)
    stranger: Issued  # a client certificate from a CA the gateway does not trust


CLIENT_SUBJECT = "CN=client-1,OU=apps,O=Dafka Tests,C=FR"
KEY_PASSWORD = b"key secret 42"


def server_certificate(ca: Authority, directory: Path, file_name: str, common_name: str = "localhost") -> Issued:
    """A server certificate for 127.0.0.1 and localhost, its key encrypted with KEY_PASSWORD."""
    return issue(ca, directory, file_name, _name(O="Dafka Tests", CN=common_name), server=True,
                 password=KEY_PASSWORD)


def make_certificates(directory: Path) -> Certificates:
    directory.mkdir(parents=True, exist_ok=True)
    ca, other = authority(directory, "test-ca"), authority(directory, "other-ca")
    server = server_certificate(ca, directory, "server")
    client = issue(ca, directory, "client", _name(C="FR", O="Dafka Tests", OU="apps", CN="client-1"), server=False)
    stranger = issue(other, directory, "stranger", _name(CN="stranger"), server=False)
    return Certificates(ca.certificate, server, client, stranger)
