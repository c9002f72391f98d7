#!/usr/bin/env bash
# ingest.sh [SECS] [CONNS]: POST /ingest/orders over CONNS keep-alive connections.
#  1. gust-bench-loadgen for SECS (unique ids, waits for every response): the stream
#     must then hold exactly as many messages as 202s were answered.
#  2. wrk for SECS, the issue's reference client (it drops the requests in flight when
#     it stops, so its count can only bound the stream's).
# Also: cold start (spawn -> /healthz 200, external NATS), idle RSS, RSS under load,
# and the baseline: nats.c async publish straight to the same server.
# Writes bench/results/ingest.json when the counts check (emit_result in lib.sh).
source "$(dirname "$0")/lib.sh"
SECS=${1:-10}
CONNS=${2:-32}
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 1; }

start_nats
port=$(free_port)
cat >"$WORK/host.conf" <<CONF
log_level warn;
http { listen 127.0.0.1:$port; }
nats { url $NATS_URL; }
CONF
start_gust "$WORK/host.conf" "$port"
sleep 0.5
idle_rss=$(rss_kb "$GUST_PID")
stored() { "$BUILD/tests/gust-stream-read" "$NATS_URL" GUST --count; }

lg=$("$TOOLS/gust-bench-loadgen" --url "http://127.0.0.1:$port/ingest/orders" --connections "$CONNS" --duration "$SECS")
load_rss=$(rss_kb "$GUST_PID")
lg_accepted=$(json_field '["accepted"]' "$lg")
lg_stored=$(stored)

wrk_out=$(wrk -t1 -c"$CONNS" -d"${SECS}s" -s "$BENCH_DIR/ingest.lua" "http://127.0.0.1:$port/ingest/orders" | tail -n 1)
wrk_stored=$(( $(stored) - lg_stored ))
wrk_accepted=$(( $(json_field '["requests"]' "$wrk_out") - $(json_field '["non_202"]' "$wrk_out") ))
stop_pid "$GUST_PID"
baseline=$("$TOOLS/gust-bench-pub" "$NATS_URL" ev.baseline 200000)
ok=$([ "$lg_stored" = "$lg_accepted" ] && [ "$wrk_stored" -ge "$wrk_accepted" ] &&
     [ "$wrk_stored" -le $((wrk_accepted + CONNS)) ] && echo true || echo false)
emit_result ingest "$([ "$ok" = true ] && echo ok || echo failed)" <<JSON
{"scenario":"ingest","seconds":$SECS,"connections":$CONNS,
 "loadgen":$lg,"loadgen_stored":$lg_stored,
 "wrk":$wrk_out,"wrk_accepted":$wrk_accepted,"wrk_stored":$wrk_stored,
 "counts_check":$ok,
 "cold_start_ms":$COLD_START_MS,"idle_rss_kb":$idle_rss,"rss_under_load_kb":$load_rss,
 "baseline_nats_async_publish":$baseline}
JSON
[ "$ok" = true ]
