# Shared by the benchmark scripts: servers on free loopback ports in a temp dir,
# stopped by PID on exit, and the one way a results file is written (emit_result).
# Source it first thing; set BUILD to override the build directory.
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
GUST=$BUILD/gust
TOOLS=$BUILD/bench
WORK=$(mktemp -d /tmp/gust-bench.XXXXXX)
[ -n "${KEEP:-}" ] && echo "work dir: $WORK" >&2
PIDS=()

cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

for f in "$GUST" "$TOOLS/gust-bench-pub" "$TOOLS/gust-bench-counter" "$TOOLS/gust-bench-coldstart" \
         "$TOOLS/gust-bench-loadgen" "$TOOLS/gust-bench-sink" "$TOOLS/gust-bench-bus" "$BUILD/tests/gust-stream-read"; do
    [ -x "$f" ] || { echo "missing $f: build first (./build.sh build)" >&2; exit 1; }
done

# The run's start (date, load averages) for its provenance: taken before any server starts.
PROVENANCE_START=$(python3 "$BENCH_DIR/provenance.py" start)
# The command as started (a wrapper such as paced.sh sets it first), for the results file.
BENCH_COMMAND=${BENCH_COMMAND:-$(realpath --relative-to="$ROOT" "$0")${*:+ $*}}
export BENCH_COMMAND

# emit_result NAME [ok|failed]: the results document (a JSON object) on stdin, with where
# it comes from added (commit, CPU model, cores, build type, date, load averages at the
# start and now, command: see bench/provenance.py), printed and, unless failed, written to
# bench/results/NAME.json (RESULT=file writes it there instead, RESULT= nowhere).
emit_result() {
    python3 "$BENCH_DIR/provenance.py" emit "$1" "$BUILD" "$PROVENANCE_START" "${2:-ok}"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {
    for _ in $(seq 1 1000); do
        (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
        sleep 0.01
    done
    echo "port $1 never opened" >&2
    return 1
}

# start_nats: sets NATS_PORT, NATS_URL, NATS_PID
start_nats() {
    NATS_PORT=$(free_port)
    NATS_URL=nats://127.0.0.1:$NATS_PORT
    nats-server -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$WORK/nats-$NATS_PORT" >"$WORK/nats.log" 2>&1 &
    NATS_PID=$!
    PIDS+=("$NATS_PID")
    wait_port "$NATS_PORT"
}

# start_mosquitto [CONF_LINE...]: a mosquitto on a free loopback port (sets MQTT_PORT and
# MOSQ_PID) with Nagle off and no cap on queued messages (the default 1000 would make the
# broker, not the path measured, drop under a burst); extra lines go into its config.
start_mosquitto() {
    MQTT_PORT=$(free_port)
    {
        printf 'listener %s 127.0.0.1\nallow_anonymous true\nuser root\n' "$MQTT_PORT"
        printf 'set_tcp_nodelay true\nmax_queued_messages 0\n'
        [ $# -eq 0 ] || printf '%s\n' "$@"
    } >"$WORK/mosquitto.conf"
    mosquitto -c "$WORK/mosquitto.conf" >"$WORK/mosquitto.log" 2>&1 &
    MOSQ_PID=$!
    PIDS+=("$MOSQ_PID")
    wait_port "$MQTT_PORT"
}

# start_gust CONF_FILE HTTP_PORT: sets GUST_PID and COLD_START_MS (spawn -> /healthz 200)
start_gust() {
    local out
    out=$("$TOOLS/gust-bench-coldstart" "$2" "$GUST" -c "$1" 2>>"$WORK/gust.log")
    GUST_PID=$(echo "$out" | sed 's/.*"pid":\([0-9]*\).*/\1/')
    COLD_START_MS=$(echo "$out" | sed 's/.*"cold_start_ms":\([0-9.]*\).*/\1/')
    PIDS+=("$GUST_PID")
}

# make_streams: runs gust once without units, so that its streams exist before a
# benchmark stores events in them.
make_streams() {
    local port
    port=$(free_port)
    printf 'log_level warn;\nhttp { listen 127.0.0.1:%s; }\nnats { url %s; }\n' "$port" "$NATS_URL" >"$WORK/streams.conf"
    start_gust "$WORK/streams.conf" "$port"
    stop_pid "$GUST_PID"
}

stop_pid() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# cpu_ticks PID: user + system CPU of a process so far, in clock ticks (getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

rss_kb() {
    local kb
    rss_kb_into kb "$1" && echo "$kb"
}

# rss_kb_into VAR PID: PID's VmRSS in kB into VAR with shell builtins only (samplers run it
# several times a second beside what they measure; a fork each time would cost CPU there).
# Fails when PID is gone.
rss_kb_into() {
    local _rss_key _rss_val _rss_rest
    while read -r _rss_key _rss_val _rss_rest; do
        [ "$_rss_key" = VmRSS: ] && { printf -v "$1" %s "$_rss_val"; return 0; }
    done <"/proc/$2/status" 2>/dev/null
    return 1
}

# rss_peak_sampler PID FILE: until PID ends, writes its largest RSS so far (kB) to FILE
rss_peak_sampler() {
    local peak=0 r
    while rss_kb_into r "$1"; do
        [ "$r" -gt "$peak" ] && peak=$r && echo "$peak" >"$2"
        sleep 0.2
    done
}

# sink_wait PORT N: waits up to 120 s for the gust-bench-sink on PORT to count N unique ids,
# then prints its stats. One curl and a shell match a poll: a python start every poll would
# take CPU from the system under test while it drains its backlog.
sink_wait() {
    local json=""
    for _ in $(seq 1 2400); do
        json=$(curl -s "http://127.0.0.1:$1/stats")
        [[ $json =~ \"unique\":([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge "$2" ] && break
        sleep 0.05
    done
    echo "$json"
}

# median of the numbers given as arguments
median() {
    printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'
}

json_field() { # json_field NAME JSON
    echo "$2" | python3 -c "import json,sys; print(json.load(sys.stdin)$1)"
}
