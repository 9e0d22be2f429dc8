#!/usr/bin/env bash
# A fleet of arctern demo servers on this machine: Redis, N instances sharing one
# request-state key file, and nginx in front of them, all on 127.0.0.1 with free ports.
#
#   scripts/fleet.sh up N [--release] [--kms] [--haproxy]
#                                        start everything; prints one JSON line:
#                                        {"url": …, "instances": [{"id", "url", "pid"}], "redis": …}
#                                        --kms: no shared key ring; each instance seals under its
#                                        own data keys wrapped by a (local) key service
#                                        --haproxy: HAProxy in front too ("haproxy_url"), routing
#                                        2025-era sessions with balance hdr(Mcp-Session-Id)
#   scripts/fleet.sh down               stop exactly what `up` started
#   scripts/fleet.sh status             the same JSON line, for a running fleet
#   scripts/fleet.sh restart ID         graceful restart of one instance: out of nginx, drain
#                                        (SIGTERM), start again on its port, back into nginx
#   scripts/fleet.sh reload-keys        SIGHUP every instance (after editing the key file)
#   scripts/fleet.sh test               lint deploy/, then the fleet tests (real nginx and Redis)
#
# nginx and redis-server (and haproxy) come from the distribution's packages: the system's
# when installed, else fetched once with `apt-get download` (no root needed) into
# ${XDG_CACHE_HOME:-~/.cache}/arctern/fleet-packages, outside the checkout, and run from there.
# Where apt is not available, install them yourself; `test` then skips with a message.
#
# State (pid files, logs, the key file, the rendered nginx.conf) lives in $ARCTERN_FLEET_DIR,
# by default a directory under /tmp named after the user: never inside the checkout.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${ARCTERN_FLEET_DIR:-${TMPDIR:-/tmp}/arctern-fleet-$(id -un)}"
NGINX_TEMPLATE="$ROOT/deploy/nginx/arctern-fleet.conf.template"
HAPROXY_TEMPLATE="$ROOT/deploy/haproxy/arctern-fleet.cfg.template"
# How long a stopping process may drain before it is killed.
STOP_GRACE_SECONDS=15

die() { echo "fleet.sh: $*" >&2; exit 1; }
say() { echo "fleet.sh: $*" >&2; }

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; }

# --- packages ------------------------------------------------------------------------------

# Packages that are not installed are fetched once with `apt-get download` (no root needed)
# and unpacked into this cache, outside the checkout; nothing is installed system-wide, and
# no system service is started. ARCTERN_FLEET_PACKAGES=cache uses the cache even where the
# system has the tools (what a fresh machine does).
PKG_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/arctern/fleet-packages"
PKG_ROOT="$PKG_CACHE/root"

# The path of TOOL: the system's, else the cache's; nothing when neither has it.
tool_path() { # TOOL
    local dir
    if [ "${ARCTERN_FLEET_PACKAGES:-}" != cache ]; then
        command -v "$1" 2>/dev/null && return 0
        for dir in /usr/sbin /usr/bin; do
            [ -x "$dir/$1" ] && { echo "$dir/$1"; return 0; }
        done
    fi
    for dir in usr/sbin usr/bin; do
        [ -x "$PKG_ROOT/$dir/$1" ] && { echo "$PKG_ROOT/$dir/$1"; return 0; }
    done
    return 1
}

# Runs TOOL (exec: the pid stays the tool's), with the cache's libraries when it is the
# cache's.
run_tool() { # TOOL ARGS...
    local bin
    bin="$(tool_path "$1")" || die "$1 is not available"
    shift
    case "$bin" in
        "$PKG_ROOT"/*) exec env LD_LIBRARY_PATH="$(cache_libs)" "$bin" "$@" ;;
        *) exec "$bin" "$@" ;;
    esac
}

cache_libs() {
    local dirs="" d
    for d in "$PKG_ROOT"/lib/*-linux-gnu "$PKG_ROOT"/usr/lib/*-linux-gnu "$PKG_ROOT"/usr/lib; do
        [ -d "$d" ] && dirs+="${dirs:+:}$d"
    done
    echo "$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

# The dependency groups of PACKAGE, one line each (alternatives on one line).
dependency_groups() { # PACKAGE
    apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
        --no-enhances "$1" 2>/dev/null | awk '
        /^ [ |](Pre)?Depends: / {
            name = $2; alt = ($0 ~ /^ \|/)
            group = group (group == "" ? "" : " ") name
            if (!alt) { print group; group = "" }
        }'
}

# Fetches PACKAGES and the dependencies this system lacks into the cache.
fetch_packages() { # PACKAGES...
    command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 || {
        say "needs $*; apt-get is not available: install them with your package manager"
        return 3
    }
    if [ -z "$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)"')" ]; then
        if [ "$(id -u)" = 0 ]; then
            apt-get update -qq >&2 || true
        fi
        [ -n "$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)"')" ] || {
            say "apt knows no package $1 (run apt-get update as root, or install $* yourself)"
            return 3
        }
    fi
    mkdir -p "$PKG_CACHE/debs" "$PKG_ROOT"
    local -a queue=("$@") fetch=()
    local -A seen=()
    local pkg group member pick depth=0
    # Two levels of dependencies: the tools' libraries and theirs.
    while [ "${#queue[@]}" != 0 ] && [ "$depth" -lt 3 ]; do
        local -a next=()
        for pkg in "${queue[@]}"; do
            [ -n "${seen[$pkg]:-}" ] && continue
            seen[$pkg]=1
            fetch+=("$pkg")
            while read -r group; do
                pick=""
                for member in $group; do
                    if [[ "$member" == "<"* ]]; then continue; fi
                    if installed "$member" || [ -n "${seen[$member]:-}" ]; then pick=""; break; fi
                    [ -z "$pick" ] && pick="$member"
                done
                [ -n "$pick" ] && next+=("$pick")
            done < <(dependency_groups "$pkg")
        done
        queue=("${next[@]+"${next[@]}"}")
        depth=$((depth + 1))
    done
    say "fetching ${fetch[*]} into $PKG_CACHE (apt-get download; nothing is installed system-wide)"
    (cd "$PKG_CACHE/debs" && apt-get download -qq "${fetch[@]}" >&2) || {
        say "apt-get download ${fetch[*]} failed: install $* yourself (apt-get install $*)"
        return 3
    }
    local deb
    for deb in "$PKG_CACHE"/debs/*.deb; do
        dpkg-deb -x "$deb" "$PKG_ROOT"
    done
}

# Makes nginx and redis-server (and haproxy with --haproxy) available: the system's, else
# the cache's, fetched when missing. Exit code 3: they cannot be had here.
ensure_packages() { # [haproxy]
    # TOOL:PACKAGES (redis-server is a link into redis-tools).
    local -a want=(nginx:nginx redis-server:redis-server,redis-tools) missing=()
    [ "${1:-}" = haproxy ] && want+=(haproxy:haproxy)
    local item
    local -a packages
    for item in "${want[@]}"; do
        if ! tool_path "${item%%:*}" >/dev/null; then
            IFS=, read -r -a packages <<<"${item#*:}"
            missing+=("${packages[@]}")
        fi
    done
    [ "${#missing[@]}" = 0 ] && return 0
    # One fetcher at a time; whoever waited finds the work done.
    mkdir -p "$PKG_CACHE"
    exec 9>"$PKG_CACHE.lock"
    flock 9
    missing=()
    for item in "${want[@]}"; do
        if ! tool_path "${item%%:*}" >/dev/null; then
            IFS=, read -r -a packages <<<"${item#*:}"
            missing+=("${packages[@]}")
        fi
    done
    if [ "${#missing[@]}" != 0 ]; then
        fetch_packages "${missing[@]}" || { exec 9>&-; return 3; }
    fi
    exec 9>&-
    for item in "${want[@]}"; do
        tool_path "${item%%:*}" >/dev/null || { say "${item%%:*} is still missing after fetching ${item#*:}"; return 3; }
    done
}

# --- processes -----------------------------------------------------------------------------

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_port() { # PORT SECONDS
    local deadline=$((SECONDS + $2))
    until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.05
    done
}

# The pid in a pid file, if that process still runs the program the file was written for
# (so that a recycled pid is never signalled).
live_pid() { # PIDFILE
    [ -f "$1" ] || return 1
    local pid expect
    read -r pid expect <"$1" || return 1
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$expect" || return 1
    echo "$pid"
}

stop_pidfile() { # PIDFILE
    local pid
    if pid="$(live_pid "$1")"; then
        kill -TERM "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + STOP_GRACE_SECONDS))
        while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.05; done
        if kill -0 "$pid" 2>/dev/null; then
            say "pid $pid did not stop within ${STOP_GRACE_SECONDS}s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$1"
}

arctern_bin() {
    if [ -n "${ARCTERN_BIN:-}" ]; then
        echo "$ARCTERN_BIN"
        return
    fi
    local profile=debug flags=()
    if [ "${RELEASE:-0}" = 1 ]; then profile=release; flags=(--release); fi
    say "building the arctern command ($profile)"
    (cd "$ROOT" && cargo build -q -p arctern-cli "${flags[@]}" >&2)
    echo "$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/$profile/arctern"
}

# Starts instance ID on PORT (0: a free one); prints its port.
start_instance() { # ID PORT
    local id="$1" port="$2" bin keys
    bin="$(cat "$STATE/arctern-bin")"
    if [ -f "$STATE/kms-key" ]; then
        keys=(--kms-key-file "$STATE/kms-key")
    else
        keys=(--key-file "$STATE/state-keys")
    fi
    : >"$STATE/$id.out"
    "$bin" --output json serve --port "$port" --instance-id "$id" "${keys[@]}" \
        --audience arctern-fleet --redis "$(cat "$STATE/redis-url")" \
        >"$STATE/$id.out" 2>>"$STATE/$id.log" </dev/null &
    local pid=$!
    echo "$pid --instance-id $id --${keys[0]#--}" >"$STATE/$id.pid"
    local deadline=$((SECONDS + 60)) line=""
    until line="$(head -n1 "$STATE/$id.out" 2>/dev/null)" && [ -n "$line" ]; do
        kill -0 "$pid" 2>/dev/null || die "instance $id exited at start; see $STATE/$id.log"
        [ "$SECONDS" -lt "$deadline" ] || die "instance $id did not start; see $STATE/$id.log"
        sleep 0.05
    done
    echo "$line" | python3 -c 'import json,sys,urllib.parse; print(urllib.parse.urlsplit(json.load(sys.stdin)["url"]).port)'
}

# Renders nginx.conf from the instances file; DOWN names an instance left out (a restart).
render_nginx() { # [DOWN]
    local down="${1:-}" servers="" upstreams="" map="" id port
    local -a ids=() ports=()
    while read -r id port; do ids+=("$id"); ports+=("$port"); done <"$STATE/instances"
    for i in "${!ids[@]}"; do
        id="${ids[$i]}"; port="${ports[$i]}"
        if [ "$id" = "$down" ]; then
            servers+="        server 127.0.0.1:$port down;"$'\n'
        else
            servers+="        server 127.0.0.1:$port max_fails=1 fail_timeout=2s;"$'\n'
        fi
        upstreams+="    upstream arctern_$id {"$'\n'"        server 127.0.0.1:$port max_fails=1 fail_timeout=2s;"$'\n'
        # When the instance holding a session is gone, another answers 404 (session not
        # found) at once, and the client opens a new session.
        local backup="${ports[$(((i + 1) % ${#ports[@]}))]}"
        [ "$backup" != "$port" ] && upstreams+="        server 127.0.0.1:$backup backup;"$'\n'
        # No keepalive here: a connection cached to an instance that died would turn the
        # first request of its sessions into a 502 instead of the backup's 404.
        upstreams+="    }"$'\n'
        map+="        ~^$id\\.  arctern_$id;"$'\n'
    done
    local text
    text="$(<"$NGINX_TEMPLATE")"
    text="${text//@STATE@/$STATE}"
    text="${text//@WORKERS@/${NGINX_WORKERS:-1}}"
    text="${text//@LISTEN@/127.0.0.1:$(cat "$STATE/nginx-port")}"
    text="${text//@SERVERS@/${servers%$'\n'}}"
    text="${text//@INSTANCE_UPSTREAMS@/${upstreams%$'\n'}}"
    text="${text//@SESSION_MAP@/${map%$'\n'}}"
    printf '%s\n' "$text" >"$STATE/nginx.conf.new"
    (run_tool nginx -t -q -e "$STATE/nginx-error.log" -c "$STATE/nginx.conf.new" -p "$STATE") 2>>"$STATE/nginx-error.log" \
        || die "the rendered nginx configuration is invalid; see $STATE/nginx-error.log"
    mv "$STATE/nginx.conf.new" "$STATE/nginx.conf"
}

# nginx re-reads its configuration: new workers take over, old ones finish the requests
# they have and exit. Returns when the old workers are gone, so that nothing is routed by the
# old configuration any more.
reload_nginx() {
    local pid old w deadline
    pid="$(live_pid "$STATE/nginx.pidfile")" || die "nginx is not running"
    old="$(pgrep -P "$pid" || true)"
    kill -HUP "$pid"
    deadline=$((SECONDS + STOP_GRACE_SECONDS))
    for w in $old; do
        while kill -0 "$w" 2>/dev/null; do
            [ "$SECONDS" -lt "$deadline" ] || die "nginx's old worker $w did not exit"
            sleep 0.05
        done
    done
}

# Renders haproxy.cfg from the instances file.
render_haproxy() {
    local servers="" id port text
    while read -r id port; do
        servers+="    server $id 127.0.0.1:$port check inter 1s fall 1 rise 1"$'\n'
    done <"$STATE/instances"
    text="$(<"$HAPROXY_TEMPLATE")"
    text="${text//@LISTEN@/127.0.0.1:$(cat "$STATE/haproxy-port")}"
    text="${text//@SERVERS@/${servers%$'\n'}}"
    printf '%s\n' "$text" >"$STATE/haproxy.cfg"
    (run_tool haproxy -c -q -f "$STATE/haproxy.cfg") >>"$STATE/haproxy.log" 2>&1 \
        || die "the rendered HAProxy configuration is invalid; see $STATE/haproxy.log"
}

status_json() {
    python3 - "$STATE" <<'EOF'
import json, os, sys
state = sys.argv[1]
def read(name):
    with open(os.path.join(state, name)) as f:
        return f.read().strip()
instances = []
for line in read("instances").splitlines():
    ident, port = line.split()
    pid = int(read(ident + ".pid").split()[0])
    instances.append({"id": ident, "url": f"http://127.0.0.1:{port}/mcp", "pid": pid,
                      "log": os.path.join(state, ident + ".log")})
print(json.dumps({
    "url": f"http://127.0.0.1:{read('nginx-port')}/mcp",
    "instances": instances,
    "redis": read("redis-url"),
    **({"haproxy_url": f"http://127.0.0.1:{read('haproxy-port')}/mcp"}
       if os.path.exists(os.path.join(state, "haproxy-port")) else {}),
    "key_file": os.path.join(state, "state-keys"),
    "state_dir": state,
}))
EOF
}

# --- commands ------------------------------------------------------------------------------

cmd_up() {
    local n="${1:-}"
    shift || true
    [[ "$n" =~ ^[1-9][0-9]?$ ]] || die "usage: fleet.sh up N [--release] [--kms] [--haproxy]   (N from 1 to 99)"
    local kms=0 haproxy="" flag
    for flag in "$@"; do
        case "$flag" in
            --release) RELEASE=1 ;;
            --kms) kms=1 ;;
            --haproxy) haproxy=haproxy ;;
            *) die "unknown option $flag" ;;
        esac
    done
    if [ -f "$STATE/instances" ]; then
        die "a fleet is already up (state in $STATE): scripts/fleet.sh down first"
    fi
    local rc=0
    ensure_packages $haproxy || rc=$?
    [ "$rc" = 0 ] || exit "$rc"
    mkdir -p "$STATE/nginx-tmp"
    # Anything that fails from here on takes down what was started.
    FLEET_STARTED=0
    trap 'if [ "$FLEET_STARTED" != 1 ]; then say "start failed; stopping what was started"; cmd_down >/dev/null 2>&1 || true; fi' EXIT
    arctern_bin >"$STATE/arctern-bin"
    [ -x "$(cat "$STATE/arctern-bin")" ] || die "no arctern binary at $(cat "$STATE/arctern-bin")"

    if [ "$kms" = 1 ]; then
        (umask 077 && head -c 32 /dev/urandom | base64 -w0 >"$STATE/kms-key")
    else
        (umask 077 && echo "k1:$(head -c 32 /dev/urandom | base64 -w0)" >"$STATE/state-keys")
    fi

    local redis_port
    redis_port="$(free_port)"
    run_tool redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
        --dir "$STATE" --logfile "$STATE/redis.log" --protected-mode yes </dev/null >/dev/null 2>&1 &
    # redis-server rewrites its command line to "redis-server 127.0.0.1:PORT".
    echo "$! 127.0.0.1:$redis_port" >"$STATE/redis.pid"
    wait_port "$redis_port" 10 || die "redis-server did not start; see $STATE/redis.log"
    echo "redis://127.0.0.1:$redis_port/0" >"$STATE/redis-url"

    : >"$STATE/instances"
    local i port
    for i in $(seq 1 "$n"); do
        port="$(start_instance "i$i" 0)"
        echo "i$i $port" >>"$STATE/instances"
    done

    free_port >"$STATE/nginx-port"
    render_nginx
    run_tool nginx -e "$STATE/nginx-error.log" -c "$STATE/nginx.conf" -p "$STATE" </dev/null >>"$STATE/nginx-error.log" 2>&1 &
    echo "$! $STATE/nginx.conf" >"$STATE/nginx.pidfile"
    wait_port "$(cat "$STATE/nginx-port")" 10 || die "nginx did not start; see $STATE/nginx-error.log"
    if [ -n "$haproxy" ]; then
        free_port >"$STATE/haproxy-port"
        render_haproxy
        run_tool haproxy -db -f "$STATE/haproxy.cfg" </dev/null >>"$STATE/haproxy.log" 2>&1 &
        echo "$! $STATE/haproxy.cfg" >"$STATE/haproxy.pidfile"
        wait_port "$(cat "$STATE/haproxy-port")" 10 || die "haproxy did not start; see $STATE/haproxy.log"
    fi
    FLEET_STARTED=1
    status_json
}

cmd_down() {
    [ -d "$STATE" ] || { say "no fleet in $STATE"; return 0; }
    # The front first, so that nothing new reaches instances that are stopping.
    stop_pidfile "$STATE/haproxy.pidfile"
    stop_pidfile "$STATE/nginx.pidfile"
    local f
    for f in "$STATE"/i*.pid; do
        [ -e "$f" ] && stop_pidfile "$f"
    done
    stop_pidfile "$STATE/redis.pid"
    rm -rf "$STATE"
    say "stopped"
}

cmd_status() {
    [ -f "$STATE/instances" ] || die "no fleet is up (state in $STATE)"
    status_json
}

cmd_restart() {
    local id="${1:-}" port
    [ -f "$STATE/instances" ] || die "no fleet is up"
    port="$(awk -v id="$id" '$1 == id { print $2 }' "$STATE/instances")"
    [ -n "$port" ] || die "no instance $id"
    # 1. Out of nginx: new requests go to the others; nginx's old workers finish theirs.
    render_nginx "$id"
    reload_nginx
    # 2. Drain: the instance stops accepting and finishes what is in flight.
    stop_pidfile "$STATE/$id.pid"
    # 3. Again on the same port, and back into nginx.
    start_instance "$id" "$port" >/dev/null
    render_nginx
    reload_nginx
    status_json
}

cmd_reload_keys() {
    [ -f "$STATE/instances" ] || die "no fleet is up"
    local id port pid
    while read -r id port; do
        pid="$(live_pid "$STATE/$id.pid")" && kill -HUP "$pid"
    done <"$STATE/instances"
}

cmd_lint() {
    say "checking deploy/ (yamllint, Kubernetes schemas, nginx -t, haproxy -c)"
    local missing=()
    command -v yamllint >/dev/null 2>&1 || missing+=(yamllint)
    python3 -c 'import jsonschema, yaml' 2>/dev/null || missing+=(python3-jsonschema python3-yaml)
    if [ "${#missing[@]}" != 0 ]; then
        if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
            apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
                || { say "cannot install ${missing[*]}; skipping the deploy/ checks"; return 3; }
        else
            say "needs ${missing[*]} (apt-get install ${missing[*]}); skipping the deploy/ checks"
            return 3
        fi
    fi
    ensure_packages haproxy || return $?
    yamllint -s -c "$ROOT/deploy/yamllint.yaml" "$ROOT/deploy/kubernetes"
    ARCTERN_NGINX="$(tool_path nginx)" ARCTERN_HAPROXY="$(tool_path haproxy)" \
        ARCTERN_TOOL_LIBS="$(LD_LIBRARY_PATH='' cache_libs)" python3 "$ROOT/deploy/check.py" "$ROOT/deploy"
}

cmd_test() {
    local rc=0
    ensure_packages haproxy || rc=$?
    if [ "$rc" = 3 ]; then
        echo "fleet tests: skipped (nginx, redis-server and haproxy cannot be had here)"
        return 0
    fi
    [ "$rc" = 0 ] || return "$rc"
    rc=0
    cmd_lint || rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 3 ] || return "$rc"
    cd "$ROOT"
    export ARCTERN_REQUIRE_REDIS=1
    # The Redis tests start their own redis-server: this one (the system's or the cache's).
    ARCTERN_REDIS_SERVER="$(tool_path redis-server)"
    ARCTERN_TOOL_LIBS="$(LD_LIBRARY_PATH='' cache_libs)"
    export ARCTERN_REDIS_SERVER ARCTERN_TOOL_LIBS
    # --workspace, not -p: the same features as `cargo test --workspace`, so nothing rebuilds.
    cargo test --workspace --test change_bus --test one_time --test task_store
    cargo test --workspace --test fleet -- --ignored --test-threads 1
}

case "${1:-}" in
    up) shift; cmd_up "$@" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    restart) shift; cmd_restart "$@" ;;
    reload-keys) cmd_reload_keys ;;
    lint) cmd_lint ;;
    test) cmd_test ;;
    -h|--help|help) usage ;;
    *) usage >&2; exit 2 ;;
esac
