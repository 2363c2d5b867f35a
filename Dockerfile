# One image for web, worker and repro-worker (docker-compose.yml picks the command).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    TRIAGE_VAR_DIR=/data/var TRIAGE_MEDIA_ROOT=/data/media TRIAGE_STATIC_ROOT=/app/staticfiles

# bubblewrap: the repro sandbox (repro/sandbox.py) runs training snippets without network or host access.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap util-linux tar \
    && rm -rf /var/lib/apt/lists/*

# The sandbox runtime: CPU torch first (pinned; an unpinned torch pulls a CUDA build), then the HF stack.
# Built at image build time, never at request time; readable by the sandbox uids.
ENV TRIAGE_SANDBOX_RUNTIME=/opt/triage-sandbox TRIAGE_SANDBOX_PYTHON=/usr/local/bin/python3.11
COPY scripts/sandbox-runtime.sh /tmp/sandbox-runtime.sh
RUN bash /tmp/sandbox-runtime.sh && rm /tmp/sandbox-runtime.sh

WORKDIR /app
COPY pyproject.toml ./
RUN python - <<'PY' > /tmp/requirements.txt
import tomllib
print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))
PY
RUN pip install -r /tmp/requirements.txt

COPY . .
RUN useradd --system --uid 10001 --home /app triage \
    && mkdir -p /data/var /data/media \
    && python manage.py collectstatic --noinput -v0 \
    && chown -R triage:triage /data

USER triage
EXPOSE 8000
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
