#!/bin/sh
# Redis with a password: REDIS_PASSWORD (docker-compose.yml takes it from TORCHJUDGE_REDIS_PASSWORD, which
# scripts/compose-env.sh generates into .env). The password goes into a file only this user can read, not
# onto the command line (where `ps` would show it).
set -eu
: "${REDIS_PASSWORD:?REDIS_PASSWORD is not set: run scripts/compose-env.sh}"
umask 077
conf=/tmp/redis.conf
# Append-only persistence: queued messages survive a restart of the broker.
cat > "$conf" <<CONF
bind 0.0.0.0
protected-mode yes
dir /data
appendonly yes
save ""
requirepass $REDIS_PASSWORD
CONF
exec redis-server "$conf"
