#!/usr/bin/env bash
# Ensure PostgreSQL, Redis, Chromium and docker-compose for the test suite, then run "$@" with
# TRIAGE_DATABASE_URL / TRIAGE_REDIS_URL / TRIAGE_TEST_CHROMIUM pointing at them.
#
# Services already running on 127.0.0.1 are used as they are. Otherwise, missing Debian packages
# are installed (as root) and the services are started on loopback: PostgreSQL as its own cluster
# (initdb + pg_ctl, trust auth) under var/postgres, Redis daemonised without persistence.
# Anything that cannot start is a loud failure (non-zero exit), never a skipped test.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
PY="${VENV:-.venv}/bin/python"

say() { echo "test-services: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }
is_root() { [ "$(id -u)" = 0 ]; }

PG_PORT="${TRIAGE_TEST_PG_PORT:-5432}"
REDIS_PORT="${TRIAGE_TEST_REDIS_PORT:-6379}"
CHROMIUM="${TRIAGE_TEST_CHROMIUM:-/usr/bin/chromium}"

pg_url() { echo "postgres://postgres@127.0.0.1:$1/postgres"; }
pg_ok() { "$PY" - "$1" <<'PY' >/dev/null 2>&1
import sys, psycopg
psycopg.connect(sys.argv[1], connect_timeout=3).close()
PY
}
redis_ok() { "$PY" -c "import redis, sys; redis.Redis.from_url(sys.argv[1], socket_timeout=3).ping()" "$1" >/dev/null 2>&1; }
port_busy() { "$PY" -c "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" "$1" >/dev/null 2>&1; }
pg_bindir() {
    if command -v pg_ctl >/dev/null 2>&1; then dirname "$(command -v pg_ctl)"; return; fi
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

# --- what is missing -----------------------------------------------------------------------
packages=()
need_pg=0; need_redis=0
if [ -z "${TRIAGE_TEST_DATABASE_URL:-}" ] && ! pg_ok "$(pg_url "$PG_PORT")"; then
    need_pg=1
    [ -n "$(pg_bindir)" ] || packages+=(postgresql)
fi
if [ -z "${TRIAGE_TEST_REDIS_URL:-}" ] && ! redis_ok "redis://127.0.0.1:$REDIS_PORT/0"; then
    need_redis=1
    command -v redis-server >/dev/null 2>&1 || packages+=(redis-server)
fi
[ -x "$CHROMIUM" ] || packages+=(chromium)
command -v docker-compose >/dev/null 2>&1 || packages+=(docker-compose)
# the chaos suite puts Debian's nginx (deploy/nginx.conf) in front of gunicorn
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || packages+=(nginx)

if [ "${#packages[@]}" -gt 0 ]; then
    is_root || die "missing: ${packages[*]}; run as root (or install them: apt-get install -y ${packages[*]})"
    command -v apt-get >/dev/null 2>&1 || die "missing: ${packages[*]} and no apt-get to install them"
    say "installing ${packages[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}"
fi
[ -x "$CHROMIUM" ] || die "no Chromium at $CHROMIUM (set TRIAGE_TEST_CHROMIUM)"

# --- PostgreSQL: our own cluster, trust auth on loopback -----------------------------------
if [ "$need_pg" = 1 ]; then
    bindir="$(pg_bindir)"
    [ -n "$bindir" ] || die "PostgreSQL binaries not found after installing postgresql"
    if port_busy "$PG_PORT"; then
        say "port $PG_PORT is taken by a server we cannot use without a password; using 54329"
        PG_PORT=54329
    fi
    datadir="${TRIAGE_TEST_PG_DIR:-$REPO/var/postgres}"
    as_pg=()
    if is_root; then
        # PostgreSQL refuses to run as root: the cluster belongs to the postgres user.
        id postgres >/dev/null 2>&1 || useradd --system --home /var/lib/postgresql --shell /bin/sh postgres
        as_pg=(runuser -u postgres --)
        mkdir -p "$datadir"
        if ! "${as_pg[@]}" test -x "$(dirname "$datadir")" 2>/dev/null || ! chown postgres "$datadir" 2>/dev/null \
            || ! "${as_pg[@]}" test -w "$datadir"; then
            datadir="/tmp/triage-postgres"
            mkdir -p "$datadir"
            chown postgres "$datadir"
        fi
    fi
    mkdir -p "$datadir"
    chmod 700 "$datadir"
    if [ ! -f "$datadir/PG_VERSION" ]; then
        say "initdb $datadir"
        "${as_pg[@]}" "$bindir/initdb" -D "$datadir" -U postgres --auth=trust --encoding=UTF8 --no-locale >/dev/null
    fi
    say "starting PostgreSQL on 127.0.0.1:$PG_PORT ($datadir)"
    "${as_pg[@]}" "$bindir/pg_ctl" -D "$datadir" -l "$datadir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k /tmp -c fsync=off" start >/dev/null \
        || { tail -n 30 "$datadir/server.log" >&2 || true; die "PostgreSQL did not start"; }
    pg_ok "$(pg_url "$PG_PORT")" || die "PostgreSQL started but 127.0.0.1:$PG_PORT refuses user postgres"
fi

# --- Redis ----------------------------------------------------------------------------------
if [ "$need_redis" = 1 ]; then
    say "starting Redis on 127.0.0.1:$REDIS_PORT"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no \
        --dir /tmp --logfile /tmp/triage-redis.log || die "redis-server did not start"
    for _ in $(seq 50); do redis_ok "redis://127.0.0.1:$REDIS_PORT/0" && break; sleep 0.2; done
    redis_ok "redis://127.0.0.1:$REDIS_PORT/0" || die "Redis does not answer on 127.0.0.1:$REDIS_PORT"
fi

export TRIAGE_DATABASE_URL="${TRIAGE_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:$PG_PORT/triage}"
export TRIAGE_REDIS_URL="${TRIAGE_TEST_REDIS_URL:-redis://127.0.0.1:$REDIS_PORT/0}"
export TRIAGE_TEST_CHROMIUM="$CHROMIUM"
export TRIAGE_REQUIRE_SERVICES=1
say "PostgreSQL ${TRIAGE_DATABASE_URL}, Redis ${TRIAGE_REDIS_URL}, Chromium ${TRIAGE_TEST_CHROMIUM}"
if [ "$#" -gt 0 ]; then
    exec "$@"
fi
