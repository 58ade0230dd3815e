# railyard: `railyard serve` as a non-root user. Data (the SQLite database and the `.env` the
# setup page writes) lives in /data, the working directory; mount a volume there.
#   docker build -t railyard . && docker run -p 3000:3000 -v railyard:/data railyard
# Python 3.11, the version the tests and the lock files (requirements*.lock) are made for.

# Stage 1: build railyard's wheel from the source (app.yml and the migrations are inside it).
FROM python:3.11-slim AS builder
ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY app ./app
COPY handlers ./handlers
COPY policies ./policies
COPY github_standin ./github_standin
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# Stage 2: the locked dependencies (hash-checked), then the wheel alone; no source tree.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN groupadd --system --gid 10001 railyard \
    && useradd --system --no-log-init --create-home --home-dir /data --uid 10001 --gid 10001 railyard

COPY requirements.lock /install/requirements.lock
RUN pip install --no-cache-dir --require-hashes -r /install/requirements.lock
COPY --from=builder /wheels /install/wheels
RUN pip install --no-cache-dir --no-deps /install/wheels/*.whl && rm -r /install

# Numeric, so Kubernetes' runAsNonRoot can check it.
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
# Listen on every interface inside the container (the default, 127.0.0.1, is unreachable from outside).
ENV HOST=0.0.0.0 \
    PORT=3000
EXPOSE 3000

# Slim images have no curl: ask /healthz with the standard library; any non-2xx fails the check.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('PORT', '3000') + '/healthz', timeout=4)"]

CMD ["railyard", "serve"]
