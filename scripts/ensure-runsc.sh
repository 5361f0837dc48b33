#!/usr/bin/env bash
# Makes gVisor (runsc) available to the Docker engine as the runtime "runsc", for
# GRADER_SANDBOX_RUNTIME=runsc and the runsc half of tests/security.
#
# - installs Debian's runsc package when it is missing;
# - registers it in the engine's daemon.json, merged into whatever is there, with the arguments that
#   work inside these virtual machines (--platform=ptrace --network=none);
# - only when that registration changed: asks dockerd to reload its configuration (SIGHUP: running
#   containers are kept), and restarts dockerd only if a reload does not make runsc appear;
# - checks that a container really starts under runsc, and takes the registration back if not.
# Exits 0 with a clear note when runsc cannot be installed or does not work here: it is optional.
#
# Overridable for a second engine: RUNSC_DAEMON_JSON (default /etc/docker/daemon.json),
# DOCKERD_PIDFILE (default /var/run/docker.pid), DOCKER_HOST; RUNSC_NO_RESTART=1 never restarts dockerd
# (a reload only).
set -euo pipefail
cd "$(dirname "$0")/.."

daemon_json=${RUNSC_DAEMON_JSON:-/etc/docker/daemon.json}
pidfile=${DOCKERD_PIDFILE:-/var/run/docker.pid}
image=${GRADER_SANDBOX_IMAGE:-torchjudge-sandbox}

note() { echo "==> runsc: $*"; }

runsc_listed() { docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; }

if ! docker info >/dev/null 2>&1; then
    note "no Docker engine answers; run scripts/ensure-docker.sh first. Skipping gVisor."
    exit 0
fi

runsc_path=$(command -v runsc || true)
if [ -z "$runsc_path" ]; then
    note "installing Debian's runsc package"
    if ! { export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq runsc >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq runsc >/dev/null 2>&1; }; }; then
        note "the runsc package cannot be installed here; sandboxes keep the default runtime (runc)."
        exit 0
    fi
    runsc_path=$(command -v runsc || true)
    if [ -z "$runsc_path" ]; then
        note "runsc is not on PATH after installing it; sandboxes keep the default runtime (runc)."
        exit 0
    fi
fi

# Merge the registration into daemon.json; prints "changed" or "same". The previous file is kept
# (daemon.json.before-runsc) so that a registration that does not work can be taken back.
merge() {
    python3 - "$daemon_json" "$runsc_path" <<'EOF'
import json, os, shutil, sys
path, runsc = sys.argv[1], sys.argv[2]
try:
    with open(path) as handle:
        text = handle.read()
    config = json.loads(text) if text.strip() else {}
except FileNotFoundError:
    config = None
except ValueError:
    print("invalid")
    sys.exit(0)
if config is not None and not isinstance(config, dict):
    print("invalid")
    sys.exit(0)
wanted = {"path": runsc, "runtimeArgs": ["--platform=ptrace", "--network=none"]}
current = dict(config or {})
if current.get("runtimes", {}).get("runsc") == wanted:
    print("same")
    sys.exit(0)
if config is not None:
    shutil.copyfile(path, path + ".before-runsc")
elif os.path.exists(path + ".before-runsc"):
    os.remove(path + ".before-runsc")
current.setdefault("runtimes", {})["runsc"] = wanted
os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
with open(path + ".tmp", "w") as handle:
    json.dump(current, handle, indent=2)
    handle.write("\n")
os.replace(path + ".tmp", path)
print("changed")
EOF
}

dockerd_pid() {
    if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        cat "$pidfile"
    else
        pidof dockerd 2>/dev/null | awk '{print $1}'
    fi
}

wait_for() {  # wait_for SECONDS COMMAND...
    local seconds=$1
    shift
    for _ in $(seq 1 "$seconds"); do
        "$@" && return 0
        sleep 1
    done
    return 1
}

hup_engine() {
    local pid
    pid=$(dockerd_pid)
    [ -n "$pid" ] || return 1
    note "asking dockerd ($pid) to reload its configuration"
    kill -HUP "$pid"
}

reload_engine() {
    local pid
    pid=$(dockerd_pid)
    if hup_engine && wait_for 15 runsc_listed; then
        return 0
    fi
    if [ "${RUNSC_NO_RESTART:-0}" = 1 ]; then
        return 1
    fi
    note "reloading did not register runsc: restarting dockerd"
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet docker 2>/dev/null; then
        systemctl restart docker
    elif [ -n "$pid" ]; then
        kill -TERM "$pid"
        wait_for 30 sh -c "! kill -0 $pid 2>/dev/null" || true
        mkdir -p /var/log
        nohup dockerd >/var/log/torchjudge-dockerd.log 2>&1 &
        wait_for 60 docker info >/dev/null 2>&1 || true
    fi
    wait_for 15 runsc_listed
}

state=$(merge)
if [ "$state" = "invalid" ]; then
    note "$daemon_json is not a JSON object; leaving it alone. Sandboxes keep runc."
    exit 0
elif [ "$state" = "changed" ]; then
    note "registered $runsc_path in $daemon_json"
    reload_engine || true
elif ! runsc_listed; then
    note "$daemon_json registers runsc but the engine does not list it yet"
    reload_engine || true
fi

if ! runsc_listed; then
    note "the engine does not list runsc after a reload; sandboxes keep runc."
    exit 0
fi

# A real container under gVisor, with the sandbox's own flags that matter to it.
smoke_image=$image
docker image inspect "$smoke_image" >/dev/null 2>&1 || smoke_image=debian:bookworm-slim
if docker image inspect "$smoke_image" >/dev/null 2>&1; then
    if docker run --rm --runtime runsc --network none --read-only --user 10001:10001 \
            --entrypoint /bin/true "$smoke_image" >/dev/null 2>&1; then
        note "ready: GRADER_SANDBOX_RUNTIME=runsc runs sandboxes under gVisor"
    else
        note "a container does not start under runsc on this machine; taking the registration back"
        if [ -f "$daemon_json.before-runsc" ]; then
            mv "$daemon_json.before-runsc" "$daemon_json"
        else
            python3 - "$daemon_json" <<'EOF'
import json, sys
path = sys.argv[1]
with open(path) as handle:
    config = json.load(handle)
config.get("runtimes", {}).pop("runsc", None)
if not config.get("runtimes"):
    config.pop("runtimes", None)
with open(path, "w") as handle:
    json.dump(config, handle, indent=2)
    handle.write("\n")
EOF
        fi
        hup_engine >/dev/null 2>&1 || true
    fi
else
    note "registered; no image here to check it with yet (build the sandbox image, then run this again)"
fi
exit 0
