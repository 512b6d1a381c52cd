# syntax=docker/dockerfile:1
# The pooling server's image (docs/server.md, Running in containers): `deidpool` is the
# entrypoint, the default command serves the API on port 8000, the data directory is /data.
# Build: docker build -t deidpool .   (compose.yaml runs it with PostgreSQL and a worker)

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/deidpool
WORKDIR /src
COPY pyproject.toml README.md ./
COPY deidpool/ deidpool/
COPY corpus/ corpus/
COPY representer/ representer/
COPY pseudonymization/ pseudonymization/
COPY adversary/ adversary/
COPY baselines/ baselines/
COPY contribution/ contribution/
COPY client/ client/
COPY server/ server/
RUN /opt/deidpool/bin/pip install .

FROM python:3.11-slim
ENV PATH=/opt/deidpool/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DEIDPOOL_LOG_FORMAT=json
RUN groupadd --system --gid 10001 deidpool \
    && useradd --system --uid 10001 --gid deidpool --create-home --home-dir /home/deidpool deidpool \
    && mkdir /data \
    && chown deidpool:deidpool /data
COPY --from=build /opt/deidpool /opt/deidpool
USER deidpool
WORKDIR /home/deidpool
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/api/health', timeout=4)"]
ENTRYPOINT ["deidpool"]
CMD ["server", "run", "--data-dir", "/data", "--host", "0.0.0.0", "--port", "8000"]
