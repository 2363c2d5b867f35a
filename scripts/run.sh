#!/usr/bin/env bash
# make run: migrate, load the demo, then the web server, a Celery worker and Celery beat (the
# periodic sweep of stuck incidents and orphan files) together on the embedded defaults
# (SQLite + filesystem broker under var/). Ctrl-C stops them all.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${VENV:-.venv}/bin/python"
HOST_PORT="${TRIAGE_RUN_ADDR:-127.0.0.1:8000}"

"$PY" manage.py migrate --noinput
if [ -n "${TRIAGE_DEMO_PASSWORD:-}" ]; then
    "$PY" manage.py load_demo --password "$TRIAGE_DEMO_PASSWORD"
else
    "$PY" manage.py load_demo
fi

pids=()
stop_all() {
    trap - INT TERM EXIT
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done  # celery: a warm shutdown
    wait 2>/dev/null || true
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done  # leftovers (reloader child)
}
trap stop_all INT TERM EXIT

# Each child leads its own process group, so stopping it also stops its pool or reloader children.
setsid "$PY" -m celery -A config worker -Q diagnose,repro --concurrency 2 --loglevel INFO &
pids+=("$!")
setsid "$PY" -m celery -A config beat --loglevel INFO -s "${TRIAGE_VAR_DIR:-var}/celerybeat-schedule" &
pids+=("$!")
setsid "$PY" manage.py runserver "$HOST_PORT" &
pids+=("$!")

echo "Triage: http://$HOST_PORT/ (user 'demo'; the password was printed by load_demo on its first run," \
     "or set one: make run TRIAGE_DEMO_PASSWORD=...). Ctrl-C stops the web server, the worker and beat."
wait -n "${pids[@]}"  # one of them stopped: stop the other (trap)
