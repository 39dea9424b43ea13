#!/usr/bin/env bash
# Makes what compose.secure.yaml mounts at /secrets: a CA and the gateway's TLS certificate
# (for localhost, 127.0.0.1 and the gateways' names on the compose network), the mesh's CURVE key
# pair, and the gateway's properties (SASL users with random passwords, its TLS files).
# Usage: bash scripts/compose-secrets.sh [DIR]   (default ./secrets; refuses to overwrite)
# Needs openssl and a Python with pyzmq (PYTHON, default python3: e.g. the project's .venv).
# The containers' user reads the files, so they are world-readable: keep DIR itself private
# (its parent's permissions), and give clients only ca.pem and a user's password.
set -euo pipefail
dir=${1:-secrets}
python=${PYTHON:-python3}
if [ -e "$dir" ]; then
    echo "$dir exists; remove it or name another directory" >&2
    exit 1
fi
mkdir -p "$dir/mesh-public"
cd "$dir"
umask 022
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 825 \
    -subj "/CN=dafka-compose-ca" -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=gateway" \
    -keyout gateway.key -out gateway.csr 2>/dev/null
openssl x509 -req -in gateway.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 -out gateway.crt \
    -extfile <(printf "subjectAltName=DNS:localhost,DNS:gateway,DNS:gateway-2,DNS:gateway-3,IP:127.0.0.1") 2>/dev/null
cat gateway.key gateway.crt > gateway.pem
rm -f gateway.csr gateway.key gateway.crt ca.srl
"$python" - <<'PY'
import secrets, shutil, zmq.auth
zmq.auth.create_certificates(".", "mesh")
shutil.move("mesh.key", "mesh-public/mesh.key")  # the peers admitted: the mesh's one public key
passwords = {user: secrets.token_urlsafe(18) for user in ("admin", "app")}
for user, password in passwords.items():
    with open(f"{user}.password", "w") as out:
        out.write(password + "\n")
users = " ".join(f'user_{user}="{password}"' for user, password in passwords.items())
with open("gateway.properties", "w") as out:
    out.write(
        "ssl.keystore.type=PEM\nssl.keystore.location=/secrets/gateway.pem\n"
        "ssl.truststore.type=PEM\nssl.truststore.location=/secrets/ca.pem\n"
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="{passwords["admin"]}" {users};\n')
PY
chmod 644 ./*.pem ./*.password gateway.properties mesh.key_secret mesh-public/mesh.key
chmod 600 ca.key  # signs certificates; no container needs it
echo "made $(pwd): ca.pem, gateway.pem, gateway.properties, admin.password, app.password, mesh.key_secret, mesh-public/"
