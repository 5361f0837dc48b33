#!/usr/bin/env bash
# Makes sure the servers of the scale-out setup answer on this machine, for the tests and `make load`:
#   Redis       on 127.0.0.1:6379 (the Celery broker)
#   PostgreSQL  on 127.0.0.1:5432, with a role and database `torchjudge` (password `torchjudge`); the
#               role may create databases, so that each test run works in a database of its own.
# Installs Debian's redis-server and postgresql when missing and starts what is not running; does
# nothing for what already answers. Local development only: the password is not a secret.
set -euo pipefail

REDIS_PORT=6379
PG_PORT=5432
PG_ROLE=torchjudge
PG_PASSWORD=torchjudge

apt_updated=0
install() {
    export DEBIAN_FRONTEND=noninteractive
    if [ "$apt_updated" = 0 ]; then
        apt-get update -qq
        apt_updated=1
    fi
    # policy-rc.d: the packages must not start their own servers at install time (no init system here).
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
    rm -f /usr/sbin/policy-rc.d
}

# -- Redis ---------------------------------------------------------------------------------------
redis_up() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; }
if ! redis_up; then
    if ! command -v redis-server >/dev/null 2>&1; then
        echo "==> installing redis-server"
        install redis-server
    fi
    if ! redis_up; then
        echo "==> starting redis-server on 127.0.0.1:$REDIS_PORT"
        mkdir -p /var/lib/torchjudge-redis /var/log
        # Append-only persistence: a restarted broker still has its queued messages.
        redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes \
            --dir /var/lib/torchjudge-redis --appendonly yes --save '' \
            --logfile /var/log/torchjudge-redis.log
        for _ in $(seq 1 50); do redis_up && break; sleep 0.1; done
    fi
    if ! redis_up; then
        echo "redis-server did not come up; its log:" >&2
        tail -n 20 /var/log/torchjudge-redis.log >&2 || true
        exit 1
    fi
fi

# -- PostgreSQL ----------------------------------------------------------------------------------
pg_up() { pg_isready -q -h 127.0.0.1 -p "$PG_PORT" 2>/dev/null; }
if ! pg_up; then
    if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
        echo "==> installing postgresql"
        install postgresql
    fi
    version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
    if ! pg_lsclusters -h 2>/dev/null | awk '{print $1, $2}' | grep -q "^$version main$"; then
        echo "==> creating the PostgreSQL $version cluster"
        pg_createcluster "$version" main -p "$PG_PORT" >/dev/null
    fi
    if ! pg_up; then
        echo "==> starting PostgreSQL $version on 127.0.0.1:$PG_PORT"
        pg_ctlcluster "$version" main start
        for _ in $(seq 1 100); do pg_up && break; sleep 0.1; done
    fi
    if ! pg_up; then
        echo "PostgreSQL did not come up; its log:" >&2
        tail -n 20 "/var/log/postgresql/postgresql-$version-main.log" >&2 || true
        exit 1
    fi
fi

psql_admin() { su postgres -s /bin/sh -c "psql -X -q -v ON_ERROR_STOP=1 -p $PG_PORT -tA $*"; }
if [ "$(psql_admin "-c \"SELECT 1 FROM pg_roles WHERE rolname = '$PG_ROLE'\"")" != "1" ]; then
    echo "==> creating the PostgreSQL role $PG_ROLE"
    psql_admin "-c \"CREATE ROLE $PG_ROLE LOGIN CREATEDB PASSWORD '$PG_PASSWORD'\""
fi
if [ "$(psql_admin "-c \"SELECT 1 FROM pg_database WHERE datname = '$PG_ROLE'\"")" != "1" ]; then
    echo "==> creating the PostgreSQL database $PG_ROLE"
    psql_admin "-c \"CREATE DATABASE $PG_ROLE OWNER $PG_ROLE\""
fi
