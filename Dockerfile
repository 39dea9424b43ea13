# One image for every command of the project: dafka-gateway (the default), dafka-tower,
# dafka-store, chp-server, dafka-producer, dafka-consumer.
#
#   docker build -t dafka-gateway:latest .     packages from PyPI
#   bash scripts/docker-image.sh               offline: a debootstrap base and wheels made on the host
#
# The base needs `python3` (3.11) with venv and ensurepip. The builder's base is the runtime's
# Python with a C compiler and Python's headers, which build the project's compiled parts (the
# record walk, the batch receive; without them the Python paths serve, at about a microsecond
# more a record each); its `python3` is the runtime's, at the same path, so that the venv's link
# to the interpreter (/usr/local/bin or /usr/bin) holds in both.
ARG BASE_IMAGE=python:3.11-slim
ARG BUILDER_IMAGE=python:3.11

FROM ${BUILDER_IMAGE} AS builder
# OFFLINE=1: every package comes from wheelhouse/ (the dependencies and the build backend as
# wheels, made on the host) and the build needs no network; otherwise from PyPI.
ARG OFFLINE=0
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
COPY wheelhouse /wheelhouse
# The dependencies first, in a layer of their own that changes to the code leave cached.
COPY pyproject.toml docker/requirements.py /src/
RUN if [ "$OFFLINE" = 1 ]; then set -- --no-index --find-links /wheelhouse; fi \
    && python3 /src/requirements.py /src/pyproject.toml > /src/requirements.txt \
    && python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install "$@" --requirement /src/requirements.txt
COPY README.md /src/
COPY protocol /src/protocol
COPY gateway /src/gateway
# The project as a wheel, installed under a prefix of its own: the runtime lays it over the venv.
RUN if [ "$OFFLINE" = 1 ]; then set -- --no-index --find-links /wheelhouse; fi \
    && /opt/venv/bin/pip wheel "$@" --no-deps --wheel-dir /wheels /src \
    && /opt/venv/bin/pip install --no-index --no-deps --prefix /project /wheels/*.whl

FROM ${BASE_IMAGE}
RUN useradd --system --user-group --no-create-home --home-dir /data dafka \
    && mkdir /data && chown dafka:dafka /data
# The settings before the copies: after a change to the code, only the last copy is redone.
# Every command keeps its data under /data and serves /health, /ready and /metrics on 9644.
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 \
    DAFKA_LOG_DIRS=/data DAFKA_STORE_DB=/data DAFKA_HTTP_HOST= DAFKA_HTTP_PORT=9644
USER dafka
WORKDIR /data
VOLUME /data
EXPOSE 9092 9644
# Healthy once the node itself says it serves (its /ready). Asked every 2 s: each depends_on step
# of compose.yaml waits for the next check, so the interval adds up along the chain; yet each check
# is a process Docker starts in the container, about 50 ms of a core on a small machine.
HEALTHCHECK --interval=2s --timeout=10s --start-period=120s --retries=3 CMD ["bash", "/opt/dafka/healthcheck.sh"]
# Exec form: the command is PID 1 and gets SIGTERM itself. By default the single-node gateway with
# its embedded tower and store, for clients on the host (-p 9092:9092).
CMD ["dafka-gateway", "--listeners", "PLAINTEXT://:9092", "--advertised-listeners", "PLAINTEXT://localhost:9092"]
COPY docker/healthcheck.sh /opt/dafka/healthcheck.sh
COPY --from=builder /opt/venv /opt/venv
COPY --from=builder /project /opt/venv
