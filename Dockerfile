# dsctl controller image: `make image` (docker build when a Docker engine answers, else
# buildah; see docs/operations/deploy.md), or by hand `docker build -t dsctl:0.1.0 .`
#
# Two stages. The builder turns the source into a wheel and installs it, with its
# dependencies, into a virtualenv at /opt/venv. The final stage is the same Python base
# plus that virtualenv and nothing else: no compilers, no build tools, no pip.
#
# Its size is measured by `python benchmarks/image_size.py` (docs/performance.md).
# The bytecode is worth its size: the root filesystem is read-only in the cluster, so
# without it every start recompiles in memory (ADR 0034).
#
# The base is pinned to a patch release. For byte-for-byte reproducible builds pin the
# digest too: --build-arg PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:<digest>
# (`docker buildx imagetools inspect python:3.11.14-slim-bookworm` prints it).
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY pyproject.toml README.md ./
# The controller and the pure helpers it shares with the simulator (dsctl-api). The simulator
# is its own distribution (dsctl-sim) and .dockerignore keeps it out of the context.
COPY dsctl ./dsctl
COPY dsctl-api ./dsctl-api
# The package index comes from the build machine's pip configuration, passed as the secret
# `pipconf` (a pip.conf; `make image` writes it from `pip config list`). A secret, not a
# build argument, because index URLs can carry credentials and build arguments are kept in
# the image history. Without the secret pip uses its default index.
#
# The bytecode is recompiled as unchecked-hash .pyc files: pip writes timestamp-checked ones,
# and a COPY that does not keep modification times (buildah's) would make every one stale, so
# each start would compile everything again in memory (the root filesystem is read-only).
#
# The dsctl and dsctl-api wheels are installed without their dependencies (dsctl-api is not on
# an index), then dsctl's other runtime requirements. --only-binary: every dependency has
# wheels for this platform; one that would need a compiler fails the build here instead of
# silently pulling in a toolchain.
RUN --mount=type=secret,id=pipconf,target=/run/secrets/pipconf \
    export PIP_CONFIG_FILE=/run/secrets/pipconf \
 && python -m pip wheel --no-deps --wheel-dir /wheels . ./dsctl-api \
 && python -m venv --without-pip /opt/venv \
 && python -m pip --python /opt/venv/bin/python install --no-deps /wheels/dsctl-*.whl /wheels/dsctl_api-*.whl \
 && /opt/venv/bin/python -c "from importlib.metadata import requires; print('\n'.join(r for r in requires('dsctl') if 'extra ==' not in r and not r.startswith('dsctl-api')))" \
    > /wheels/runtime-requirements.txt \
 && python -m pip --python /opt/venv/bin/python install --only-binary=:all: -r /wheels/runtime-requirements.txt \
 && python -m compileall -q --invalidation-mode unchecked-hash /opt/venv/lib \
 && /opt/venv/bin/dsctl --version

FROM ${PYTHON_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="dsctl" \
      org.opencontainers.image.description="A Kubernetes DaemonSet controller in Python asyncio" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
# Nothing in the image may install code at run time: pip, setuptools and wheel go, whether
# the base installed them with pip (the python images) or with dpkg (a Debian-bootstrapped
# base), and so do ensurepip's bundled wheels.
RUN set -eu; \
    if dpkg-query --show --showformat='${Status}' python3-pip 2>/dev/null | grep -q 'ok installed'; then \
      dpkg --purge python3-pip python3-venv python3.11-venv python3-setuptools python3-wheel \
        python3-pip-whl python3-setuptools-whl >/dev/null; \
    else \
      python -m pip uninstall --yes --quiet pip setuptools wheel; \
    fi; \
    rm -rf /usr/share/python-wheels; \
    python -c "import importlib.util as u, pathlib, shutil; s = u.find_spec('ensurepip'); \
s and shutil.rmtree(pathlib.Path(s.origin).parent / '_bundled', ignore_errors=True)"
# Owned by root and read-only to the runtime user: the process cannot change its own code.
COPY --from=builder /opt/venv /opt/venv
ENV PATH="/opt/venv/bin:${PATH}" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Numeric, so Kubernetes can verify runAsNonRoot without reading /etc/passwd.
USER 65532:65532
EXPOSE 8080 8081
# dsctl runs as PID 1 and installs its own SIGTERM/SIGINT handlers (graceful drain,
# Lease release), so no init process is needed.
ENTRYPOINT ["dsctl", "run"]
