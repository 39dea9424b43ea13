#!/usr/bin/env bash
# Builds the image with no registry and no network inside the build:
#  * the base images (the runtime's, and the builder's with a C compiler) are Debian bookworm
#    roots made here with debootstrap (needs root; each reused while made from the same recipe);
#  * the Python packages are wheels built here into wheelhouse/ (rebuilt when the project's
#    requirements or the host's Python change), installed in the image with --no-index.
# Usage: bash scripts/docker-image.sh [TAG]   (default dafka-gateway:latest)
# Exit status 77 (a test suite's "skip") when the base is missing and cannot be made here, or
# the host's Python cannot make wheels for it.
# Environment: PYTHON (a CPython 3.11, as the base's; default python3), DEBIAN_MIRROR.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-dafka-gateway:latest}
python=${PYTHON:-python3}
# python3-venv brings ensurepip's wheels: the image's venv is made with them. The builder's base
# adds a C compiler and Python's headers, for the project's compiled parts.
runtime_recipe="bookworm minbase python3,python3-venv"
builder_recipe="bookworm minbase python3,python3-venv,python3-dev,gcc,libc6-dev"
# One build at a time in this checkout: two would rewrite wheelhouse/ under each other.
exec 9>wheelhouse/.lock
flock 9

# make_base TAG RECIPE: a Debian root made by debootstrap from RECIPE, imported as TAG, unless
# TAG was made from that recipe already.
make_base() {
    local base=$1 recipe=$2 suite variant include root
    if [ "$(docker image inspect -f '{{index .Config.Labels "dafka.recipe"}}' "$base" 2>/dev/null)" = "$recipe" ]; then
        return
    fi
    if [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null; then
        echo "no $base image, and making it needs debootstrap run as root (apt-get install debootstrap)" >&2
        exit 77
    fi
    read -r suite variant include <<<"$recipe"
    root=$(mktemp -d)
    trap 'rm -rf "$root"' EXIT
    debootstrap --variant="$variant" --include="$include" "$suite" "$root" \
        "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >/dev/null
    # Nothing in a container needs the package caches, documentation or translations.
    rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/usr/share/{doc,man,info,locale}/*
    # An imported root has no configuration: PATH and LANG as Debian's own images set them.
    tar -C "$root" -c . | docker import \
        --change "LABEL dafka.recipe=\"$recipe\"" \
        --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --change "ENV LANG=C.UTF-8" \
        - "$base" >/dev/null
    rm -rf "$root"
    trap - EXIT
}
make_base dafka-base:bookworm "$runtime_recipe"
make_base dafka-builder:bookworm "$builder_recipe"

"$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
    || { echo "$python is not Python 3.11: its wheels would not fit the base's Python (set PYTHON)" >&2; exit 77; }
# What the image's pip installs: the build backend for the project, and the project's dependencies.
requirements=$("$python" docker/requirements.py --build)
key=$({ echo "$requirements"; "$python" -VV; } | sha256sum | cut -d' ' -f1)
if [ "$(cat wheelhouse/.key 2>/dev/null)" != "$key" ]; then
    rm -f wheelhouse/*.whl wheelhouse/.key
    "$python" -m pip wheel -q --wheel-dir wheelhouse --requirement <(echo "$requirements")
    echo "$key" > wheelhouse/.key
fi

# Docker's legacy builder where BuildKit's client (buildx) is missing, as with Debian's docker.io.
docker buildx version >/dev/null 2>&1 || export DOCKER_BUILDKIT=0
docker build -q --build-arg BASE_IMAGE=dafka-base:bookworm --build-arg BUILDER_IMAGE=dafka-builder:bookworm \
    --build-arg OFFLINE=1 -t "$tag" . >/dev/null
