#!/bin/bash
# The container's health check: the node's own /ready, on the port DAFKA_HTTP_PORT names.
# Exit status 0 when it answers 200, 1 otherwise, with the reason on stderr for `docker inspect`.
# Bash alone (its /dev/tcp): Docker runs this in every container every interval, and starting a
# Python interpreter for it cost several times the CPU of the rest of the check.
port=${DAFKA_HTTP_PORT:-}
if [ -z "$port" ]; then
    echo "unhealthy: DAFKA_HTTP_PORT names no HTTP endpoint to ask" >&2
    exit 1
fi
if ! { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
    echo "unhealthy: nothing answers on port $port" >&2
    exit 1
fi
printf 'GET /ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
IFS=$' \r' read -r -t 4 _ status _ <&3
[ "$status" = 200 ] && exit 0
last=
while IFS=$'\r' read -r -t 4 line <&3; do last=$line; done
echo "unhealthy: /ready answered ${status:-nothing} $last" >&2
exit 1
