"""sasl.jaas.config: Kafka's JAAS text read into login modules and options; its errors never show the text."""

import pytest

from gateway.settings.jaas import PLAIN_MODULE, JaasConfig, LoginModule, login_modules, module_options
from gateway.settings.kinds import NotAllowed

OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


def test_entries_options_quotes_and_escapes():
    text = (f'{PLAIN_MODULE} required username="admin" password="a\\"b" user_alice=alice-secret;\n'
            f'  {OAUTH} optional unsecuredValidatorRequiredScope="read write";')
    assert login_modules(text) == (
        LoginModule(PLAIN_MODULE, (("username", "admin"), ("password", 'a"b'), ("user_alice", "alice-secret"))),
        LoginModule(OAUTH, (("unsecuredValidatorRequiredScope", "read write"),)),
    )
    assert module_options(text, OAUTH) == {"unsecuredValidatorRequiredScope": "read write"}
    assert login_modules("") == ()


@pytest.mark.parametrize("text", [
    f'{PLAIN_MODULE} user_alice="hunter2";',  # no flag
    f'{PLAIN_MODULE} required user_alice="hunter2"',  # no ';'
    f'{PLAIN_MODULE} required user_alice="hunter2" = ;',
    f'{PLAIN_MODULE} required user_alice="hunter2"; {OAUTH} required unsecuredValidatorAllowableClockSkewMs=x;',
])
def test_a_malformed_text_is_refused_without_showing_it(text):
    with pytest.raises(NotAllowed) as refused:
        JaasConfig().parse(text)
    assert "hunter2" not in str(refused.value)


def test_it_is_a_password_for_describe_configs():
    assert JaasConfig.config_type == "PASSWORD"


def test_kafkas_per_listener_jaas_lines_add_their_modules(tmp_path):
    from gateway.settings.declaration import Command
    from gateway.settings.sources import load, parser_for

    config = tmp_path / "server.properties"
    config.write_text(f'listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_MODULE} required \\\n'
                      f'    user_alice="alice-secret";\n'
                      f'listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config={OAUTH} required '
                      f'unsecuredValidatorPrincipalClaimName=user;\n')
    loaded = load(Command.GATEWAY, parser_for(Command.GATEWAY, "dafka-gateway", ""), ["--config", str(config)])
    jaas = loaded.settings.broker.sasl_jaas_config
    assert module_options(jaas, PLAIN_MODULE) == {"user_alice": "alice-secret"}
    assert module_options(jaas, OAUTH) == {"unsecuredValidatorPrincipalClaimName": "user"}
    assert not loaded.warnings
