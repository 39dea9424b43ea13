"""The pieces of TLS without a server: the context Kafka's settings make, subjects as Java
writes them, and ssl.principal.mapping.rules."""

from __future__ import annotations

import contextlib
import ssl

import pytest
import trio
import trio.testing

from gateway.server.tls import TlsAcceptor, TlsSettingsError, normalized_pem, server_context, subject_name
from gateway.settings.kinds import NotAllowed, Secret
from gateway.settings.principal_rules import PrincipalRules, mapped_name
from gateway.settings.table import SslSettings
from tests.gateway.certificates import KEY_PASSWORD, make_certificates

SUBJECT = "CN=client-1,OU=apps,O=Dafka Tests,C=FR"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("certificates"))


def pem_settings(certificates, **more) -> SslSettings:
    return SslSettings(**{"ssl_keystore_type": "PEM", "ssl_keystore_location": str(certificates.server.keystore),
                          "ssl_key_password": Secret(KEY_PASSWORD.decode())} | more)


@pytest.mark.parametrize("rules, name", [
    ("DEFAULT", SUBJECT),
    ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/", "client-1@apps"),
    ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U", "CLIENT-1@APPS"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, RULE:^.*[Cc][Nn]=([a-zA-Z0-9.-]*).*$/$1/L,DEFAULT", "client-1"),
    ("RULE:^CN=([^,]*),O.*$/svc\\/$1 costs \\$1/", "svc/client-1 costs $1"),
    ("RULE:^CN=nobody.*$/x/,DEFAULT", SUBJECT),
    ("RULE:^CN=nobody.*$/x/", None),
])
def test_the_first_matching_rule_names_the_principal(rules, name):
    assert mapped_name(PrincipalRules().parse(rules), SUBJECT) == name


def test_rules_read_back_as_written():
    text = "RULE:^CN=(.*?),OU=(.*?)$/$1/L,DEFAULT"
    kind = PrincipalRules()
    assert kind.text(kind.parse(text)) == text


@pytest.mark.parametrize("rules", ["", "RULE:x", "RULE:a/b/X", "RULE:(/x/", "DEFAULT,,DEFAULT"])
def test_a_rule_that_is_not_kafkas_syntax_is_refused(rules):
    with pytest.raises(NotAllowed):
        PrincipalRules().parse(rules)


def test_a_subject_is_written_most_specific_first_with_javas_keywords_and_escapes():
    certificate = {"subject": ((("countryName", "FR"),), (("organizationName", "Acme, Inc."),),
                               (("organizationalUnitName", "a"), ("userId", "7")),
                               (("commonName", "#1 <x> "),), (("emailAddress", "x@y"),))}
    assert subject_name(certificate) == r"emailAddress=x@y,CN=\#1 \<x\>\ ,OU=a+UID=7,O=Acme\, Inc.,C=FR"
    assert subject_name({"subject": ((("commonName", " "),), (("commonName", " a "),))}) == r"CN=\ a\ ,CN=\ "


def test_a_pem_value_run_into_one_line_reads_as_its_certificate(certificates):
    text = certificates.ca.read_text()
    one_line = "".join(text.split("\n"))
    assert normalized_pem(one_line) == normalized_pem(text)
    ssl.create_default_context(cadata=normalized_pem(one_line))
    with pytest.raises(TlsSettingsError, match="no PEM block"):
        normalized_pem("MIIB")


def test_the_versions_are_the_enabled_ones_up_to_ssl_protocol(certificates):
    context = server_context(pem_settings(certificates))
    assert (context.minimum_version, context.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)
    context = server_context(pem_settings(certificates, ssl_protocol="TLSv1.2"))
    assert context.maximum_version == ssl.TLSVersion.TLSv1_2
    context = server_context(pem_settings(certificates, ssl_enabled_protocols="TLSv1.3", ssl_protocol="TLS"))
    assert context.minimum_version == ssl.TLSVersion.TLSv1_3


def test_client_auth_and_cipher_suites_are_applied(certificates):
    context = server_context(pem_settings(certificates, ssl_client_auth="required", ssl_truststore_type="PEM",
                                          ssl_truststore_location=str(certificates.ca),
                                          ssl_cipher_suites=("ECDHE-ECDSA-AES256-GCM-SHA384",)))
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"} == \
           {"ECDHE-ECDSA-AES256-GCM-SHA384"}


@pytest.mark.parametrize("more, message", [
    ({"ssl_cipher_suites": ("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",)}, "not an OpenSSL cipher name"),
    ({"ssl_enabled_protocols": "TLSv1.3", "ssl_protocol": "TLSv1.2"}, "has no version up to ssl.protocol"),
    ({"ssl_key_password": Secret("wrong")}, "cannot load the private key and certificate chain"),
    ({"ssl_key_password": None}, "cannot load the private key and certificate chain"),
    ({"ssl_truststore_location": "/nonexistent/ca.pem"}, "No such file"),
])
def test_settings_that_cannot_serve_say_why(certificates, more, message):
    with pytest.raises(TlsSettingsError, match=message):
        server_context(pem_settings(certificates, **more))


def test_a_password_never_shows_in_a_repr():
    settings = SslSettings(ssl_key_password=Secret("hunter2"))
    assert "hunter2" not in repr(settings) and "hunter2" not in str(settings.ssl_key_password)


async def handshake_with(acceptor: TlsAcceptor, client: ssl.SSLContext):
    """What the acceptor makes of a client with `client` over an in-memory stream."""
    client_end, server_end = trio.testing.memory_stream_pair()
    client_tls = trio.SSLStream(client_end, client, server_hostname="localhost")

    async def client_handshake():
        with contextlib.suppress(trio.BrokenResourceError):
            await client_tls.do_handshake()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(client_handshake)
        return await acceptor.handshake(server_end, "127.0.0.1:1", "SSL")


@pytest.mark.parametrize("rules, principal", [
    ("RULE:^CN=([^,]*),OU=apps,.*$/$1/U", "User:CLIENT-1"),
    ("RULE:^CN=nobody,.*$/x/", None),  # no rule maps the subject: refused, as Kafka refuses it
])
async def test_the_principal_is_the_mapped_subject_or_the_client_is_refused(certificates, rules, principal):
    context = server_context(pem_settings(certificates, ssl_client_auth="required", ssl_truststore_type="PEM",
                                          ssl_truststore_location=str(certificates.ca)))
    acceptor = TlsAcceptor(lambda listener: context, 10.0, PrincipalRules().parse(rules))
    client = ssl.create_default_context(cafile=str(certificates.ca))
    client.load_cert_chain(str(certificates.client.certificate), str(certificates.client.key))
    secured = await handshake_with(acceptor, client)
    assert (str(secured[1]) if secured else None) == principal
