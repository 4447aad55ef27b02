# syntax=docker/dockerfile:1
# titanium-gateway controller image: `titanium-gateway controller`.
# Build:  docker build -t ghcr.io/justcoding121/titanium-gateway:dev .   (make image)
# Stage 1 builds the package and its dependencies into a virtual environment; the final stage
# copies only that environment onto a slim Python base: no compiler, no pip, no build tools,
# runs as the non-root user 1654 and works with a read-only root file system.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/titanium-gateway
ENV PATH=/opt/titanium-gateway/bin:$PATH
# Dependencies first (cached while only the source changes): binary wheels only, no compiler.
COPY pyproject.toml setup.cfg README.md ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
      > /tmp/requirements.txt
RUN pip install --only-binary=:all: -r /tmp/requirements.txt
COPY titanium_gateway ./titanium_gateway
RUN pip install --no-deps . \
 && python -m compileall -q /opt/titanium-gateway/lib \
 && pip uninstall -y pip setuptools wheel \
 && titanium-gateway --help >/dev/null

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="titanium-gateway" \
      org.opencontainers.image.description="Gateway API and Ingress controller for the Titanium reverse proxy" \
      org.opencontainers.image.source="https://github.com/justcoding121/titanium-gateway" \
      org.opencontainers.image.licenses="Apache-2.0"
# No package manager for Python in the final image, and a fixed non-root user.
RUN python -m pip uninstall -y pip setuptools wheel >/dev/null 2>&1 || true; \
    rm -rf /usr/local/lib/python3.11/ensurepip /root/.cache \
 && groupadd --gid 1654 titanium \
 && useradd --uid 1654 --gid 1654 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin titanium
COPY --from=build /opt/titanium-gateway /opt/titanium-gateway
# MALLOC_ARENA_MAX=2: glibc's malloc otherwise gives each thread (informers, status writers,
# HTTP) an arena of its own, and what a thread frees (a decoded list page) stays resident there.
ENV PATH=/opt/titanium-gateway/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MALLOC_ARENA_MAX=2
USER 1654:1654
EXPOSE 8081
ENTRYPOINT ["titanium-gateway"]
CMD ["controller"]
