#!/usr/bin/env bash
# run.sh [SECS] [CONNS]: the end-to-end path of bench/WORKLOAD.md, saturated.
#   gust-bench-loadgen (HTTP POST, keep-alive, unique ids, t stamped) -> /ingest ->
#   JetStream -> flow bench_orders.lua -> JetStream -> http_out -> gust-bench-sink,
#   which measures latency from t and counts unique ids.
# Checks delivered == accepted before it reports. With RATE set (paced.sh), the load
# generator holds that rate instead of saturating. SEND_ASAP=on sets nats { send_asap on; }.
# The baseline, on the same nats-server once gust has stopped: the bus alone doing the
# path's JetStream work (gust-bench-bus path: store, a publish-before-ack hop, a reading
# sink) for as many events, at the same rate or with as many publishes in flight as
# connections; bus_path_ids does the same with a Nats-Msg-Id on every publish, as gust's
# ingest and flows send them (the server's duplicate check is part of gust's work).
# Writes bench/results/run.json (paced: paced-RATE.json) when every event arrived.
source "$(dirname "$0")/lib.sh"
SECS=${1:-10}
CONNS=${2:-32}
RATE=${RATE:-}

start_nats
"$TOOLS/gust-bench-sink" --port 0 >"$WORK/sink.out" 2>"$WORK/sink.err" &
PIDS+=("$!")
while ! grep -q '^port' "$WORK/sink.out" 2>/dev/null; do sleep 0.01; done
sink_port=$(awk '/^port/ {print $2}' "$WORK/sink.out")
port=$(free_port)
cat >"$WORK/host.conf" <<CONF
log_level warn;
plugin_dir $BUILD/plugins;
plugin http_out;
http { listen 127.0.0.1:$port; }
nats { url $NATS_URL; send_asap ${SEND_ASAP:-off}; }
flow orders { script $ROOT/scripts/bench_orders.lua; source ev.orders; }
sink out { use http_out; source ev.orders.out; url http://127.0.0.1:$sink_port/hit; }
CONF
start_gust "$WORK/host.conf" "$port"

# Sample RSS while the load runs; keep the largest.
rss_peak_sampler "$GUST_PID" "$WORK/rss" &
sampler=$!
lg=$("$TOOLS/gust-bench-loadgen" --url "http://127.0.0.1:$port/ingest/orders" --connections "$CONNS" \
     --duration "$SECS" ${RATE:+--rate "$RATE"})
accepted=$(json_field '["accepted"]' "$lg")
sink=$(sink_wait "$sink_port" "$accepted")
kill "$sampler" 2>/dev/null || true
unique=$(json_field '["unique"]' "$sink")
rss_peak=$(cat "$WORK/rss" 2>/dev/null || echo null)
stop_pid "$GUST_PID"
n_bus=${RATE:+$((RATE * SECS))}
bus_path() { "$TOOLS/gust-bench-bus" "$NATS_URL" path 256 "${n_bus:-$accepted}" BUSPATH 308 "${RATE:-0}" "$CONNS"; }
bus=$(bus_path)
bus_ids=$(PATH_MSG_IDS=1 bus_path)
name=run
[ -z "$RATE" ] || name=paced-$RATE
emit_result "$name" "$([ "$unique" = "$accepted" ] && echo ok || echo failed)" <<JSON
{"scenario":"${SCENARIO:-e2e-saturated}","seconds":$SECS,"connections":$CONNS,"rate_target":${RATE:-null},
 "cold_start_ms":$COLD_START_MS,
 "ingest":$lg,
 "sink":$sink,
 "accepted":$accepted,"delivered_unique":$unique,"delivered_equals_accepted":$([ "$unique" = "$accepted" ] && echo true || echo false),
 "rss_peak_kb":$rss_peak,"binary_bytes":$(stat -c %s "$GUST"),
 "bus_path":$bus,
 "bus_path_ids":$bus_ids}
JSON
[ "$unique" = "$accepted" ]
