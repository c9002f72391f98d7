#!/usr/bin/env bash
# bench/compare/run.sh [SECS] [CONNS] [MQTT_N]: gust and Node-RED side by side, same
# machine, same run, same work (the orders workload of bench/WORKLOAD.md).
#
#   e2e:  gust-bench-loadgen -> POST /ingest/orders -> orders -> HTTP POST -> gust-bench-sink
#         gust:     ingest -> JetStream -> flow bench_orders.lua -> JetStream -> http_out
#         Node-RED: http in -> function (orders.js) -> http request (keep-alive) -> http
#                   response, sent only once the sink has answered
#   mqtt: mqtt_orders pub -> mosquitto -> orders -> mosquitto -> mqtt_orders sub, QoS 1 both ways
#         gust:     mqtt_in -> JetStream -> flow bench_orders.lua -> JetStream -> mqtt_out
#         gust_edge: mqtt_in -(edge, in memory: PUBACK once queued, as Node-RED's)-> the
#                   same flow -> JetStream -> mqtt_out
#         Node-RED: mqtt in -> the same function node -> mqtt out
#
# Both systems are started first (cold start: exec -> GET /healthz 200, timed by
# gust-bench-coldstart; idle RSS 2 s later). Each gets a warm-up (WARMUP s of load,
# default 3; MQTT_WARMUP messages, default 2000). Then ROUNDS rounds (default 2) alternate
# Node-RED and gust: SECS seconds (default 10) of load on CONNS connections (default 32),
# each round against a fresh sink; then one round of gust held at Node-RED's median
# delivered rate (the latency of the same load: saturated, gust's backlog in JetStream is
# latency that Node-RED, whose client waits for each delivery, never queues); then MQTT_N messages (default 8000) with MQTT_WINDOW
# (default 1000) awaiting their PUBACK. Every delivery is checked, warm-ups included: the
# sink's unique ids must equal the requests the load generator had accepted (202), the
# MQTT subscriber must see all ids, none foreign. Rates and latency percentiles are
# medians of the rounds. A delivered rate is the round's deliveries over the time from
# the first request to the last delivery. RSS of every process is sampled every 0.1 s; CPU
# seconds are read from /proc.
#
# Node-RED: npm package node-red@$NODE_RED_VERSION (default 4.1.15, the newest whose
# engines accept Node.js 20; 5.x needs >= 22.9), installed on first use into
# bench/compare/.node-red with `npm install --prefix` (never globally), run with
# settings.js (no editor, no admin API) in a throwaway userDir. gust uses nats-server as
# bench/lib.sh does (its own, on a free port, a throwaway store), one per scenario.
#
# COMPARE_ONLY=mqtt runs the MQTT part alone (Node-RED and gust, the same rounds), for
# A/B runs of gust builds (BUILD=dir): the same JSON keys, those of the e2e part null,
# written nowhere unless RESULT names a file.
#
# Prints one JSON object, also written to bench/results/compare.json (emit_result in
# bench/lib.sh: RESULT=path to change, RESULT= to skip).
source "$(dirname "$0")/../lib.sh"
COMPARE=$BENCH_DIR/compare
SECS=${1:-10}
CONNS=${2:-32}
MQTT_N=${3:-8000}
ROUNDS=${ROUNDS:-2}
MQTT_WINDOW=${MQTT_WINDOW:-1000}
WARMUP=${WARMUP:-3}
MQTT_WARMUP=${MQTT_WARMUP:-2000}
NODE_RED_VERSION=${NODE_RED_VERSION:-4.1.15}
NR_DIR=$COMPARE/.node-red
ONLY=${COMPARE_ONLY:-}
case $ONLY in
'') ;;
mqtt) [ -n "${RESULT+set}" ] || export RESULT= ;; # a partial run replaces no results file
*) echo "COMPARE_ONLY: \"$ONLY\" is not mqtt" >&2; exit 1 ;;
esac

for f in "$BUILD/plugins/mqtt.so" "$BUILD/plugins/http_out.so"; do
    [ -f "$f" ] || { echo "missing $f: build first" >&2; exit 1; }
done
command -v node >/dev/null && command -v npm >/dev/null || { echo "node and npm are needed" >&2; exit 1; }
command -v mosquitto >/dev/null || { echo "mosquitto is needed" >&2; exit 1; }

# ---- Node-RED, installed locally on first use ----
nr_installed() {
    node -p "require('$NR_DIR/node_modules/node-red/package.json').version" 2>/dev/null
}
if [ "$(nr_installed)" != "$NODE_RED_VERSION" ]; then
    echo "installing node-red@$NODE_RED_VERSION into $NR_DIR" >&2
    mkdir -p "$NR_DIR"
    npm install --prefix "$NR_DIR" --no-audit --no-fund --omit=dev --loglevel=error \
        "node-red@$NODE_RED_VERSION" >&2
fi
NR_ENGINES=$(node -p "require('$NR_DIR/node_modules/node-red/package.json').engines.node")
node -e "process.exit(require('$NR_DIR/node_modules/semver').satisfies(process.version, '$NR_ENGINES') ? 0 : 1)" || {
    echo "node-red@$NODE_RED_VERSION wants Node.js $NR_ENGINES, this is $(node --version)" >&2
    exit 1
}
(cd "$COMPARE" && node make-flows.js --check >&2)

# ---- the MQTT tools, built here (bench/tools' pair speaks {"id":N} messages) ----
MQ=$WORK/mqtt_orders
cc -O2 -std=gnu11 -Wall -Wextra -I"$BENCH_DIR/tools" -o "$MQ" "$COMPARE/mqtt_orders.c" \
    "$BENCH_DIR/tools/sink_stats.c" -lmosquitto

now_ms() { date +%s%3N; }
mark() { echo "$1 $(now_ms)" >>"$WORK/marks"; } # phase boundaries for the RSS samples

# start_sink NAME [PORT]: a counting sink (a free port, or PORT again: a fresh sink for each
# round, so that each round has its own latency percentiles); sets SINK_PORT, SINK_PID_<NAME>
start_sink() {
    rm -f "$WORK/sink-$1.out"
    "$TOOLS/gust-bench-sink" --port "${2:-0}" >"$WORK/sink-$1.out" 2>"$WORK/sink-$1.err" &
    PIDS+=("$!")
    printf -v "SINK_PID_$1" %s "$!"
    while ! grep -q '^port' "$WORK/sink-$1.out" 2>/dev/null; do sleep 0.01; done
    SINK_PORT=$(awk '/^port/ {print $2}' "$WORK/sink-$1.out")
}
restart_sink() { # NAME PORT
    local v=SINK_PID_$1
    stop_pid "${!v}"
    start_sink "$1" "$2"
}

start_mosquitto "max_inflight_messages 1000"

# ---- Node-RED ----
start_sink nodered
NR_SINK=$SINK_PORT
NR_PORT=$(free_port)
mkdir -p "$WORK/nr-user"
# Through sh, which writes its pid and execs node: gust-bench-coldstart gives up after 30 s
# without telling the pid of what it started, and that process must still be stopped.
out=$(cd "$COMPARE" && SINK_URL=http://127.0.0.1:$NR_SINK/hit MQTT_HOST=127.0.0.1 MQTT_PORT=$MQTT_PORT \
      NODE_RED_PORT=$NR_PORT "$TOOLS/gust-bench-coldstart" "$NR_PORT" \
      sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$WORK/nodered.pid" \
      node "$NR_DIR/node_modules/node-red/red.js" --settings "$COMPARE/settings.js" \
      --userDir "$WORK/nr-user" "$COMPARE/flows.json" 2>>"$WORK/nodered.log") || {
    PIDS+=("$(cat "$WORK/nodered.pid")")
    echo "Node-RED did not answer /healthz: $(tail -5 "$WORK/nodered.log")" >&2
    exit 1
}
NR_PID=$(echo "$out" | sed 's/.*"pid":\([0-9]*\).*/\1/')
NR_COLD=$(echo "$out" | sed 's/.*"cold_start_ms":\([0-9.]*\).*/\1/')
PIDS+=("$NR_PID")
sleep 2
NR_IDLE=$(rss_kb "$NR_PID")

# ---- gust, e2e (its own nats-server) ----
# (None: what the Python report below reads for a part not run)
G_E2E_PID=0 E2E_NATS_PID=0 G_COLD=None G_IDLE=None G_NATS_IDLE=None NR_RATE=None
start_gust_e2e() {
    start_nats
    E2E_NATS_PID=$NATS_PID
    start_sink gust
    G_SINK=$SINK_PORT
    G_PORT=$(free_port)
    cat >"$WORK/gust-e2e.conf" <<CONF
log_level warn;
plugin_dir $BUILD/plugins;
plugin http_out;
http { listen 127.0.0.1:$G_PORT; }
nats { url $NATS_URL; }
flow orders { script $ROOT/scripts/bench_orders.lua; source ev.orders; }
sink out { use http_out; source ev.orders.out; url http://127.0.0.1:$G_SINK/hit; }
CONF
    start_gust "$WORK/gust-e2e.conf" "$G_PORT"
    G_E2E_PID=$GUST_PID
    G_COLD=$COLD_START_MS
    sleep 2
    G_IDLE=$(rss_kb "$G_E2E_PID")
    G_NATS_IDLE=$(rss_kb "$E2E_NATS_PID")
}
[ "$ONLY" = mqtt ] || start_gust_e2e

# RSS of every process of interest, every 0.1 s, until the run ends
# (shell builtins only: a fork per process per sample would take CPU from the systems measured)
( more=""
  while :; do
      t=${EPOCHREALTIME/./}
      [ -z "$more" ] && [ -f "$WORK/more-pids" ] && read -r more <"$WORK/more-pids"
      for p in $NR_PID $G_E2E_PID $E2E_NATS_PID $MOSQ_PID $more; do
          rss_kb_into r "$p" && echo "$((t / 1000)) $p $r"
      done
      sleep 0.1
  done ) >"$WORK/rss" 2>/dev/null &
PIDS+=("$!")

# e2e_round SYSTEM ROUND [SECS [RATE]]: one load run against a fresh sink; appends one JSON
# line to $WORK/e2e.jsonl (with SECS: a warm-up, not recorded). SYSTEM gust_paced is gust
# with the load generator holding RATE requests/s.
e2e_round() {
    local sys=$1 r=$2 port sink pid delivered lg accepted t0 c0 c1 n0 n1 stats rate owner=gust
    if [ "$sys" = nodered ]; then port=$NR_PORT sink=$NR_SINK pid=$NR_PID owner=nodered
    else port=$G_PORT sink=$G_SINK pid=$G_E2E_PID; fi
    restart_sink "$owner" "$sink"
    c0=$(cpu_ticks "$pid") n0=$(cpu_ticks "$E2E_NATS_PID")
    mark "e2e-$sys-start"
    t0=$(now_ms)
    lg=$("$TOOLS/gust-bench-loadgen" --url "http://127.0.0.1:$port/ingest/orders" --connections "$CONNS" \
         --duration "${3:-$SECS}" --first-id "$((r * 100000000 + 1))" ${4:+--rate "$4"})
    accepted=$(json_field '["accepted"]' "$lg")
    stats=$(sink_wait "$sink" "$accepted")
    mark "e2e-$sys-end"
    c1=$(cpu_ticks "$pid") n1=$(cpu_ticks "$E2E_NATS_PID")
    delivered=$(json_field '["unique"]' "$stats")
    [ "$delivered" = "$accepted" ] || { echo "$sys e2e round $r: accepted $accepted, delivered $delivered" >&2; exit 1; }
    [ -n "${3:-}" ] && return 0
    # The delivered rate: from the first request to the last delivery.
    [[ $stats =~ \"last_ms\":([0-9.]+) ]]
    rate=$(awk -v n="$delivered" -v a="$t0" -v b="${BASH_REMATCH[1]}" 'BEGIN{printf "%.1f", n / ((b - a) / 1e3)}')
    echo "{\"system\":\"$sys\",\"round\":$r,\"t0_ms\":$t0,\"accepted\":$accepted,\"delivered\":$delivered,\
\"delivered_per_s\":$rate,\"cpu_ticks\":$((c1 - c0)),\"nats_cpu_ticks\":$((n1 - n0)),\"loadgen\":$lg,\"sink\":$stats}" >>"$WORK/e2e.jsonl"
}

e2e_rounds() {
    # Warm-up: the first requests of each system pay for one-time work (Node-RED's lazy
    # loading and V8's compiler above all), which the rounds should not measure.
    e2e_round nodered 90 "$WARMUP"
    e2e_round gust 91 "$WARMUP"
    for r in $(seq 1 "$ROUNDS"); do
        e2e_round nodered "$((2 * r))"
        e2e_round gust "$((2 * r + 1))"
    done
    # gust held at Node-RED's own delivered rate: the latency of the same load. (Saturated,
    # gust's ingest outruns its flow and sink, and the backlog in JetStream is latency.)
    NR_RATE=$(python3 - "$WORK/e2e.jsonl" <<'PY'
import json, statistics, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
print(int(statistics.median(x["delivered_per_s"] for x in rs if x["system"] == "nodered")))
PY
    )
    e2e_round gust_paced 99 "" "$NR_RATE"
    stop_pid "$G_E2E_PID"
    stop_pid "$E2E_NATS_PID"
}
[ "$ONLY" = mqtt ] || e2e_rounds

# ---- gust, MQTT (a second nats-server: the script's emit subject is fixed, so the
# e2e and MQTT paths of one stream would mix) ----
start_nats
MQ_NATS_PID=$NATS_PID
G_MQ_HTTP=$(free_port)
cat >"$WORK/gust-mqtt.conf" <<CONF
log_level info;
plugin_dir $BUILD/plugins;
plugin mqtt;
http { listen 127.0.0.1:$G_MQ_HTTP; }
nats { url $NATS_URL; }
source min { use mqtt_in; broker 127.0.0.1:$MQTT_PORT; topic gust/in; subject ev.orders; qos 1; }
flow orders { script $ROOT/scripts/bench_orders.lua; source ev.orders; }
source ein { use mqtt_in; broker 127.0.0.1:$MQTT_PORT; topic gust/edge; subject ev.orders; qos 1; }
flow orders_edge { script $ROOT/scripts/bench_orders.lua; edge ein; }
sink mout { use mqtt_out; source ev.orders.out; broker 127.0.0.1:$MQTT_PORT; topic gust/out; qos 1; }
CONF
start_gust "$WORK/gust-mqtt.conf" "$G_MQ_HTTP"
G_MQ_PID=$GUST_PID
echo "$G_MQ_PID $MQ_NATS_PID" >"$WORK/more-pids"

# mqtt_topics SYSTEM: sets in, out and pid (gust_edge shares gust's output and process)
mqtt_topics() {
    case $1 in
    gust) in=gust/in out=gust/out pid=$G_MQ_PID ;;
    gust_edge) in=gust/edge out=gust/out pid=$G_MQ_PID ;;
    *) in=orders/in out=orders/out pid=$NR_PID ;;
    esac
}

# probe SYSTEM: one order through, retried until the path is up (subscriptions made)
probe() {
    local in out pid
    mqtt_topics "$1"
    for i in $(seq 1 100); do
        rm -f "$WORK/probe.err"
        "$MQ" sub 127.0.0.1 "$MQTT_PORT" "$out" 1 2 --start "$i" --id "probe-$1-$i" >/dev/null 2>"$WORK/probe.err" &
        local sub=$!
        while ! grep -q ready "$WORK/probe.err" 2>/dev/null; do sleep 0.01; done
        "$MQ" pub 127.0.0.1 "$MQTT_PORT" "$in" 1 --start "$i" --id "probe-pub-$1" >/dev/null
        wait "$sub" && return 0
    done
    echo "$1: the MQTT path never came up" >&2
    exit 1
}

# mqtt_round SYSTEM ROUND [N]: appends one JSON line to $WORK/mqtt.jsonl (with N: a
# warm-up of N messages, checked but not recorded)
mqtt_round() {
    local sys=$1 r=$2 n=${3:-$MQTT_N} in out pid start sub c0 c1 n0 n1 m0 m1
    mqtt_topics "$sys"
    start=$((r * 100000000))
    c0=$(cpu_ticks "$pid") n0=$(cpu_ticks "$MQ_NATS_PID") m0=$(cpu_ticks "$MOSQ_PID")
    mark "mqtt-$sys-start"
    rm -f "$WORK/sub.err"
    "$MQ" sub 127.0.0.1 "$MQTT_PORT" "$out" "$n" 300 --start "$start" --id "compare-$sys-$r" \
        >"$WORK/sub.json" 2>"$WORK/sub.err" &
    sub=$!
    while ! grep -q ready "$WORK/sub.err" 2>/dev/null; do sleep 0.01; done
    "$MQ" pub 127.0.0.1 "$MQTT_PORT" "$in" "$n" --start "$start" --window "$MQTT_WINDOW" \
        --id "compare-pub-$sys-$r" >"$WORK/pub.json"
    wait "$sub" || { echo "$sys MQTT round $r lost messages: $(cat "$WORK/sub.json")" >&2; exit 1; }
    mark "mqtt-$sys-end"
    c1=$(cpu_ticks "$pid") n1=$(cpu_ticks "$MQ_NATS_PID") m1=$(cpu_ticks "$MOSQ_PID")
    [ -n "${3:-}" ] && return 0
    echo "{\"system\":\"$sys\",\"round\":$r,\"cpu_ticks\":$((c1 - c0)),\"nats_cpu_ticks\":$((n1 - n0)),\
\"mosquitto_cpu_ticks\":$((m1 - m0)),\"pub\":$(cat "$WORK/pub.json"),\"sub\":$(cat "$WORK/sub.json")}" >>"$WORK/mqtt.jsonl"
}

probe nodered
probe gust
probe gust_edge
mqtt_round nodered 90 "$MQTT_WARMUP"
mqtt_round gust 91 "$MQTT_WARMUP"
mqtt_round gust_edge 92 "$MQTT_WARMUP"
for r in $(seq 1 "$ROUNDS"); do
    mqtt_round nodered "$((3 * r))"
    mqtt_round gust "$((3 * r + 1))"
    mqtt_round gust_edge "$((3 * r + 2))"
done

# ---- the report ----
json=$(python3 - "$WORK" <<PY
import json, statistics, sys
w = sys.argv[1]
hz = $(getconf CLK_TCK)
def lines(f):
    try:
        return [json.loads(l) for l in open(f"{w}/{f}")]
    except FileNotFoundError:  # COMPARE_ONLY=mqtt: no e2e rounds
        return []
e2e, mq = lines("e2e.jsonl"), lines("mqtt.jsonl")
spans = {}  # "e2e-gust" -> [(start, end)] over the rounds
for l in open(f"{w}/marks"):
    k, t = l.split()
    name, edge = k.rsplit("-", 1)
    if edge == "start": spans.setdefault(name, []).append([int(t), None])
    else: spans[name][-1][1] = int(t)
samples = [tuple(map(int, l.split())) for l in open(f"{w}/rss") if len(l.split()) == 3]
def peak(pid, phase, sys_):
    iv = spans.get(f"{phase}-{sys_}", [])
    rs = [r for t, p, r in samples if p == pid and any(a <= t <= b for a, b in iv)]
    return max(rs) if rs else None
def peak_any(pid):
    rs = [r for t, p, r in samples if p == pid]
    return max(rs) if rs else None
med = lambda xs: round(statistics.median(xs), 1)
ratio = lambda a, b: round(a / b, 2) if a and b else None
pick = lambda d, *ks: (pick(d[ks[0]], *ks[1:]) if len(ks) > 1 else d[ks[0]]) if d else None
add = lambda a, b: a + b if a is not None and b is not None else None

def e2e_of(sys_):
    rs = [x for x in e2e if x["system"] == sys_]
    if not rs:
        return None
    rates = [x["delivered_per_s"] for x in rs]
    return {
        "delivered_per_s_median": med(rates), "delivered_per_s": [round(r) for r in rates],
        "accepted": sum(x["accepted"] for x in rs), "delivered_unique": sum(x["delivered"] for x in rs),
        "sink_duplicates": sum(x["sink"]["duplicates"] for x in rs),
        "loadgen_non_202": sum(x["loadgen"]["non_202"] for x in rs),
        "loadgen_errors": sum(x["loadgen"]["errors"] for x in rs),
        "latency_ms_median_of_rounds": {k: round(statistics.median(x["sink"]["latency_us"][k] for x in rs) / 1e3, 2)
                                        for k in ("p50", "p90", "p99", "max")},
        "client_latency_ms_p99_per_round": [x["loadgen"]["latency_ms"]["p99"] for x in rs],
        "cpu_s": round(sum(x["cpu_ticks"] for x in rs) / hz, 2),
        "events_per_cpu_s": round(sum(x["delivered"] for x in rs) / max(sum(x["cpu_ticks"] for x in rs) / hz, 0.01)),
    }
def mqtt_of(sys_):
    rs = [x for x in mq if x["system"] == sys_]
    rates = [$MQTT_N / ((x["sub"]["last_new_ms"] - x["pub"]["start_ms"]) / 1e3) for x in rs]
    return {
        "round_trips_per_s_median": med(rates), "round_trips_per_s": [round(r) for r in rates],
        "messages_per_round": $MQTT_N, "all_delivered": all(x["sub"]["missing"] == 0 and x["sub"]["foreign"] == 0 for x in rs),
        "duplicates": sum(x["sub"]["duplicates"] for x in rs),
        "latency_ms_median_of_rounds": {k: round(statistics.median(x["sub"]["latency_us"][k] for x in rs) / 1e3, 2)
                                        for k in ("p50", "p90", "p99", "max")},
        "cpu_s": round(sum(x["cpu_ticks"] for x in rs) / hz, 2),
        "mosquitto_cpu_s": round(sum(x["mosquitto_cpu_ticks"] for x in rs) / hz, 2),
        "cpu_us_per_round_trip": round(sum(x["cpu_ticks"] for x in rs) / hz * 1e6 / ($MQTT_N * len(rs)), 1),
        "mosquitto_cpu_us_per_round_trip": round(sum(x["mosquitto_cpu_ticks"] for x in rs) / hz * 1e6 / ($MQTT_N * len(rs)), 1),
    }
g_e2e, n_e2e, g_mq, n_mq = e2e_of("gust"), e2e_of("nodered"), mqtt_of("gust"), mqtt_of("nodered")
g_mq_edge = mqtt_of("gust_edge")
g_paced = e2e_of("gust_paced")
if g_paced:
    g_paced["rate_held"] = $NR_RATE
if g_e2e:
    g_e2e["nats_server_cpu_s"] = round(sum(x["nats_cpu_ticks"] for x in e2e if x["system"] == "gust") / hz, 2)
for sys_, r in (("gust", g_mq), ("gust_edge", g_mq_edge)):
    r["nats_server_cpu_s"] = round(sum(x["nats_cpu_ticks"] for x in mq if x["system"] == sys_) / hz, 2)
    r["nats_server_cpu_us_per_round_trip"] = round(r["nats_server_cpu_s"] * 1e6 / (r["messages_per_round"] * len(r["round_trips_per_s"])), 1)
if g_e2e:
    g_e2e["events_per_cpu_s_with_nats_server"] = round(g_e2e["delivered_unique"] / max((sum(x["cpu_ticks"] + x["nats_cpu_ticks"] for x in e2e if x["system"] == "gust")) / hz, 0.01))
gust = {
    "cold_start_ms": $G_COLD, "rss_idle_kb": $G_IDLE,
    "rss_peak_kb": {"e2e": peak($G_E2E_PID, "e2e", "gust"), "mqtt": peak($G_MQ_PID, "mqtt", "gust")},
    "nats_server_rss_idle_kb": $G_NATS_IDLE,
    "nats_server_rss_peak_kb": {"e2e": peak($E2E_NATS_PID, "e2e", "gust"), "mqtt": peak($MQ_NATS_PID, "mqtt", "gust")},
    "e2e": g_e2e, "e2e_at_node_red_rate": g_paced, "mqtt": g_mq, "mqtt_edge": g_mq_edge,
}
nodered = {
    "version": "$NODE_RED_VERSION", "node": "$(node --version)",
    "cold_start_ms": $NR_COLD, "rss_idle_kb": $NR_IDLE,
    "rss_peak_kb": {"e2e": peak($NR_PID, "e2e", "nodered"), "mqtt": peak($NR_PID, "mqtt", "nodered"), "whole_run": peak_any($NR_PID)},
    "e2e": n_e2e, "mqtt": n_mq,
}
gpk = max(v for v in gust["rss_peak_kb"].values() if v)
npk = max(v for v in nodered["rss_peak_kb"].values() if v)
gnpk = max((gust["rss_peak_kb"][k] or 0) + (gust["nats_server_rss_peak_kb"][k] or 0) for k in ("e2e", "mqtt"))
out = {
    "scenario": "compare-node-red", "seconds": $SECS, "connections": $CONNS, "rounds": $ROUNDS,
    "mqtt_messages": $MQTT_N, "mqtt_window": $MQTT_WINDOW, "qos": 1,
    "gust": gust, "node_red": nodered,
    "ratios_gust_to_node_red": {
        "e2e_delivered_rate": ratio(pick(g_e2e, "delivered_per_s_median"), pick(n_e2e, "delivered_per_s_median")),
        "e2e_latency_p50": ratio(pick(g_e2e, "latency_ms_median_of_rounds", "p50"), pick(n_e2e, "latency_ms_median_of_rounds", "p50")),
        "e2e_latency_p99": ratio(pick(g_e2e, "latency_ms_median_of_rounds", "p99"), pick(n_e2e, "latency_ms_median_of_rounds", "p99")),
        "e2e_latency_p99_at_node_red_rate": ratio(pick(g_paced, "latency_ms_median_of_rounds", "p99"), pick(n_e2e, "latency_ms_median_of_rounds", "p99")),
        "e2e_events_per_cpu_s": ratio(pick(g_e2e, "events_per_cpu_s"), pick(n_e2e, "events_per_cpu_s")),
        "e2e_events_per_cpu_s_with_nats_server": ratio(pick(g_e2e, "events_per_cpu_s_with_nats_server"), pick(n_e2e, "events_per_cpu_s")),
        "mqtt_round_trip_rate": ratio(g_mq["round_trips_per_s_median"], n_mq["round_trips_per_s_median"]),
        "mqtt_latency_p50": ratio(g_mq["latency_ms_median_of_rounds"]["p50"], n_mq["latency_ms_median_of_rounds"]["p50"]),
        "mqtt_latency_p99": ratio(g_mq["latency_ms_median_of_rounds"]["p99"], n_mq["latency_ms_median_of_rounds"]["p99"]),
        "mqtt_edge_round_trip_rate": ratio(g_mq_edge["round_trips_per_s_median"], n_mq["round_trips_per_s_median"]),
        "mqtt_edge_latency_p99": ratio(g_mq_edge["latency_ms_median_of_rounds"]["p99"], n_mq["latency_ms_median_of_rounds"]["p99"]),
        "rss_idle": ratio($G_IDLE, $NR_IDLE),
        "rss_idle_with_nats_server": ratio(add($G_IDLE, $G_NATS_IDLE), $NR_IDLE),
        "rss_peak": ratio(gpk, npk),
        "rss_peak_with_nats_server": ratio(gnpk, npk),
        "cold_start": ratio($G_COLD, $NR_COLD),
    },
    "checks": {"e2e_delivered_equals_accepted": all(x["delivered"] == x["accepted"] for x in e2e) if e2e else None,
               "mqtt_all_delivered_none_foreign": g_mq["all_delivered"] and g_mq_edge["all_delivered"] and n_mq["all_delivered"]},
}
print(json.dumps(out))
PY
)
emit_result compare <<<"$json"
