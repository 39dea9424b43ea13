"""The settings table: names, sources and their precedence, validation, the README's copy."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.settings.declaration import Command, declared
from gateway.settings.kinds import NotAllowed
from gateway.settings.properties import read_properties
from gateway.settings.reference import markdown_table
from gateway.settings.sources import SettingsError, flags_for, load, parser_for
from gateway.settings.table import SECTIONS, BrokerSettings, MeshSettings

README = Path(__file__).resolve().parents[2] / "README.md"
ALL = [entry for section in SECTIONS.values() for entry in declared(section)]


def loaded(argv=(), environ=None, command=Command.GATEWAY):
    return load(command, parser_for(command, "test", "test"), list(argv), environ or {})


def test_the_readme_holds_the_table_the_declarations_make():
    assert markdown_table() in README.read_text()


def test_each_setting_has_one_name_flag_and_environment_variable():
    names = [entry.name for entry in ALL] + [s for entry in ALL for s in entry.synonyms]
    assert len(names) == len(set(names))
    assert all(name == name.lower() and " " not in name and "_" not in name for name in names)
    assert len({entry.flag for entry in ALL}) == len(ALL)
    assert {entry.env for entry in ALL} == {"DAFKA_" + entry.name.replace(".", "_").upper() for entry in ALL}


def test_every_default_is_allowed_by_its_kind():
    for entry in ALL:
        assert entry.kind.check(entry.default) == entry.default, entry.name


def test_a_file_the_environment_and_flags_rise_in_precedence(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("num.partitions=3\nmin.insync.replicas=2\nlog.retention.bytes=100\n")
    settings = loaded(["--config", str(config), "--num-partitions", "5"],
                      {"DAFKA_NUM_PARTITIONS": "4", "DAFKA_MIN_INSYNC_REPLICAS": "3"}).settings
    assert (settings.broker.num_partitions, settings.broker.min_insync_replicas,
            settings.broker.log_retention_bytes) == (5, 3, 100)
    assert settings.given == {"num.partitions", "min.insync.replicas", "log.retention.bytes"}


def test_file_keys_that_do_not_apply_are_accepted_and_named_in_one_warning(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("zookeeper.connect=localhost:2181\n# a comment\nstore.db=/elsewhere\nnum.partitions=2\n")
    result = loaded(["--config", str(config)])
    assert result.settings.broker.num_partitions == 2
    assert result.warnings == [f"{config}: settings that do not apply here, ignored: zookeeper.connect, store.db"]


def test_kafkas_other_names_of_a_setting_are_read_from_files_and_the_environment(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("broker.id=7\nlog.dir=/var/lib/dafka\n")
    assert loaded(["--config", str(config)]).settings.broker.node_id == 7
    assert loaded(["--config", str(config)]).settings.broker.log_dirs == Path("/var/lib/dafka")
    assert loaded(environ={"DAFKA_BROKER_ID": "9"}).settings.broker.node_id == 9


@pytest.mark.parametrize("argv, environ, message", [
    (["--port", "99999"], {}, "port (--port): 99999 is not allowed; allowed: an integer from 0 to 65535"),
    (["--num-partitions", "0"], {}, "num.partitions (--num-partitions): 0 is not allowed; allowed: an integer of "
                                    "at least 1"),
    ([], {"DAFKA_AUTO_CREATE_TOPICS_ENABLE": "yes"}, "auto.create.topics.enable (DAFKA_AUTO_CREATE_TOPICS_ENABLE): "
                                                     "'yes' is not allowed; allowed: true or false"),
    (["--log-message-timestamp-type", "Now"], {}, "'Now' is not allowed; allowed: one of CreateTime, LogAppendTime"),
    (["--log-dirs", "a,b"], {}, "allowed: one directory path"),
    (["--beacon-sub-address", "tcp://a:5556,tcp://a:5556"], {}, "allowed: distinct endpoints tcp://HOST:PORT"),
    ([], {"DAFKA_BEACON_PUB_ADDRESS": "tcp://a:5557,b:5557"}, "'b:5557' is not allowed; allowed: an endpoint"),
])
def test_a_value_its_kind_does_not_allow_is_refused_naming_the_setting(argv, environ, message):
    with pytest.raises(SettingsError) as refused:
        loaded(argv, environ)
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_node_takes_one_tower_or_several_and_passes_them_on():
    """One endpoint, as the reference nodes take it, or a comma-separated list; an embedded
    store is given the same list by flags_for."""
    assert loaded().settings.mesh.beacon_sub_address == ("tcp://127.0.0.1:5556",)
    towers = loaded(["--beacon-pub-address", "tcp://tower:5557"],
                    {"DAFKA_BEACON_SUB_ADDRESS": "tcp://tower:5556, tcp://tower-2:5556"}).settings
    assert towers.mesh.beacon_sub_address == ("tcp://tower:5556", "tcp://tower-2:5556")
    assert towers.mesh.beacon_pub_address == ("tcp://tower:5557",)
    passed = loaded(flags_for(Command.STORE, towers), command=Command.STORE).settings
    assert passed.mesh.beacon_sub_address == towers.mesh.beacon_sub_address


def test_a_bad_line_of_a_file_is_named_by_its_line_number(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("# settings\nnum.partitions=1\n\nmessage.max.bytes = lots\n")
    with pytest.raises(SettingsError, match=rf"message.max.bytes \({config}:4\): 'lots' is not an integer"):
        loaded(["--config", str(config)])


def test_values_given_in_code_are_checked_as_values_given_as_text():
    with pytest.raises(NotAllowed, match="port"):
        BrokerSettings(port=70000)
    with pytest.raises(NotAllowed, match="beacon.interval.ms"):
        MeshSettings(beacon_interval_ms=0)


def test_log_retention_is_the_milliseconds_else_the_minutes_else_the_hours():
    assert BrokerSettings().retention_ms == 168 * 3600 * 1000
    assert BrokerSettings(log_retention_hours=1, log_retention_minutes=2).retention_ms == 120_000
    assert BrokerSettings(log_retention_minutes=2, log_retention_ms=5).retention_ms == 5
    assert BrokerSettings(log_retention_hours=-1).retention_ms == -1


def test_listeners_advertise_per_name_and_never_a_wildcard():
    settings = loaded(["--listeners", "INTERNAL://:29092,EXTERNAL://127.0.0.1:9092",
                       "--listener-security-protocol-map", "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                       "--advertised-listeners", "INTERNAL://gateway:29092"]).settings.broker
    assert [str(listener) for listener in settings.bound_listeners()] == ["INTERNAL://:29092",
                                                                          "EXTERNAL://127.0.0.1:9092"]
    assert [str(listener) for listener in settings.client_listeners()] == ["INTERNAL://gateway:29092",
                                                                           "EXTERNAL://127.0.0.1:9092"]
    assert str(BrokerSettings(host_name="10.1.2.3", port=9093).client_listeners()[0]) == "PLAINTEXT://10.1.2.3:9093"


@pytest.mark.parametrize("argv, message", [
    (["--host-name", "0.0.0.0"], "nonroutable meta-address 0.0.0.0"),
    (["--listeners", "PLAINTEXT://:9092", "--advertised-listeners", "PLAINTEXT://0.0.0.0:9092"],
     "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0"),
    (["--listeners", "PLAINTEXT://:9092", "--advertised-listeners", "OTHER://host:1"],
     "advertised listener OTHER is not one of listeners"),
    (["--listeners", "INSIDE://:9092"], "listener INSIDE has no security protocol"),
    (["--listeners", "SASL_SSL://:9093"], "listener SASL_SSL uses SASL_SSL: ssl.keystore.type JKS is not served"),
    (["--listeners", "SSL://:9093"], "listener SSL uses SSL: ssl.keystore.type JKS is not served; set it to PEM"),
    (["--listeners", "SSL://:9093", "--ssl-keystore-type", "PEM"],
     "give either ssl.keystore.location or both ssl.keystore.key and ssl.keystore.certificate.chain"),
    (["--listeners", "SSL://:9093", "--ssl-keystore-type", "PEM", "--ssl-keystore-location", "k.pem",
      "--ssl-keystore-key", "KEY"], "give either ssl.keystore.location or both"),
    (["--listeners", "SSL://:9093", "--ssl-keystore-type", "PEM", "--ssl-keystore-location", "k.pem",
      "--ssl-truststore-type", "JKS", "--ssl-truststore-location", "t.jks"], "ssl.truststore.type JKS is not served"),
    (["--ssl-principal-mapping-rules", "RULE:^CN=(.*)$/$2/"], "the pattern has no group 2"),
    (["--ssl-principal-mapping-rules", "RULE:^CN=(.*)$"], "is not a rule"),
    (["--listeners", "A://:1,A://:2"], "each listener name may appear once"),
    (["--listeners", "PLAINTEXT:9092"], "allowed: a list of NAME://HOST:PORT"),
])
def test_listeners_that_cannot_serve_clients_are_refused(argv, message):
    with pytest.raises(SettingsError, match=message):
        loaded(argv)


def test_each_command_takes_only_its_own_settings():
    store = parser_for(Command.STORE, "dafka-store", "")
    assert store.parse_args(["--store-db", "x"]).store_db == "x"
    with pytest.raises(SystemExit):
        store.parse_args(["--num-partitions", "3"])


def test_properties_files_read_as_java_reads_them():
    text = ("# comment\n! also a comment\n\nplain=1\n  spaced : two words  \nbare value\n"
            "continued=a,\\\n    b\nescaped\\=key=x\\ty\\u0041\nempty=\n")
    assert read_properties(text) == [("plain", "1", 4), ("spaced", "two words  ", 5), ("bare", "value", 6),
                                     ("continued", "a,b", 7), ("escaped=key", "x\tyA", 9), ("empty", "", 10)]


KEYS = st.text(st.characters(codec="ascii", categories=("L", "N", "P", "S", "Zs")), min_size=1, max_size=20)
VALUES = st.text(st.characters(codec="ascii", categories=("L", "N", "P", "S")), max_size=30)


def escaped(text: str) -> str:
    return "".join("\\" + c if c in "\\=: #!" else c for c in text)


@given(st.lists(st.tuples(KEYS, VALUES), max_size=10))
def test_escaped_entries_read_back_as_written(entries):
    text = "\n".join(f"{escaped(key)}={escaped(value)}" for key, value in entries)
    assert [(key, value) for key, value, _ in read_properties(text)] == entries


def test_a_listeners_own_ssl_settings_override_the_base_ones_for_it_alone(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("listeners=PLAINTEXT://:9092,INTERNAL://:9093,EXTERNAL://:9094\n"
                      "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SSL,EXTERNAL:SSL\n"
                      "ssl.keystore.type=PEM\nssl.keystore.location=/base.pem\n"
                      "listener.name.internal.ssl.keystore.location=/internal.pem\n"
                      "listener.name.internal.ssl.client.auth=required\n")
    result = loaded(["--config", str(config)], {"DAFKA_LISTENER_NAME_EXTERNAL_SSL_CLIENT_AUTH": "requested"})
    settings = result.settings
    assert (settings.ssl_of("INTERNAL").ssl_keystore_location, settings.ssl_of("INTERNAL").ssl_client_auth) == (
        "/internal.pem", "required")
    assert (settings.ssl_of("EXTERNAL").ssl_keystore_location, settings.ssl_of("EXTERNAL").ssl_client_auth) == (
        "/base.pem", "requested")
    assert settings.ssl.ssl_client_auth == "none"
    assert result.warnings == []


def test_a_listener_setting_of_no_listener_is_named_in_a_warning(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("listener.name.external.ssl.client.auth=required\nlistener.name.plaintext.ssl.protocol=TLS\n"
                      "listener.name.plaintext.sasl.kerberos.service.name=kafka\n")
    result = loaded(["--config", str(config)])
    assert result.settings.ssl_of("PLAINTEXT").ssl_protocol == "TLS"
    assert result.warnings == [
        f"{config}: settings that do not apply here, ignored: listener.name.plaintext.sasl.kerberos.service.name",
        "settings of listeners that are not in listeners, ignored: listener.name.external.ssl.client.auth"]


def test_a_listener_setting_its_base_kind_does_not_allow_is_refused(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("listener.name.plaintext.ssl.enabled.protocols=TLSv1.2,SSLv3\n")
    with pytest.raises(SettingsError, match=rf"^listener.name.plaintext.ssl.enabled.protocols \({config}:1\): "):
        loaded(["--config", str(config)])
