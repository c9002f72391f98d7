#!/usr/bin/env bash
# sink-batch.sh [N] [ROUNDS]: what batching and the rate limiter do to http_out (issue 27).
# BATCH (default 1000): the sink unit's `batch` (messages fetched at once), the same in
# every configuration; a batching sink fills its requests from one fetch, so a fetch of
# 1000 is ten requests of 100 (the default 256 would be two, and a fetch's round trip
# would weigh on each).
# N orders events are stored first; each round starts a fresh gust whose one http_out sink
# (a fresh durable consumer, so it reads all N from the start) delivers them to a fresh
# gust-bench-sink (C, epoll, pipelining: far from being the bottleneck; it counts each
# element of a batch's JSON array as an event), in four configurations taking turns:
#   batch_1     batch_max 1 (one event a request; no rate)
#   batch_100   batch_max 100 (batch_format json_array)
#   rate_off    batch_max 1, no rate: the limiter's baseline
#   rate_on     batch_max 1, rate 10000000/s: a limit it never reaches, so what it costs
#               is the token bucket's work alone
# The batching pair is measured against a far end that spends SERVICE_US (default 1000)
# microseconds on each request, one request at a time per connection, as an API does
# (gust-bench-sink --service-us): batching is there to save that cost. The limiter pair is
# measured against a far end that answers at once, where the limiter's own cost shows.
# Checks, per round: the sink saw every id once (unique N, no duplicates, no event without
# an id), and batch_100 came in batches (at most N/10 requests). Rates are the sink's
# (events from its first to its last); medians are reported, with each round's requests.
# Targets (WORKLOAD.md): batch_100 over batch_1 at least 5; rate_on over rate_off at least
# 0.95. Writes bench/results/sink-batch.json when the checks pass.
source "$(dirname "$0")/lib.sh"
N=${1:-100000}
ROUNDS=${2:-3}
BATCH=${BATCH:-1000}

start_nats
make_streams
"$TOOLS/gust-bench-pub" "$NATS_URL" ev.orders "$N" >"$WORK/pub.json"

ok=true
declare -A RATES REQUESTS
SERVICE_US=${SERVICE_US:-1000}
one_round() { # one_round NAME ROUND KEYS [SINK_ARGS]: appends the round's rate to RATES[NAME], its requests to REQUESTS[NAME]
    local name=$1 round=$2 keys=$3 port sink_port sink_pid stats
    port=$(free_port)
    # shellcheck disable=SC2086 # SINK_ARGS are words
    "$TOOLS/gust-bench-sink" --port 0 --id-field id ${4:-} >"$WORK/sink.out" 2>"$WORK/sink.err" &
    sink_pid=$!
    PIDS+=("$sink_pid")
    while ! grep -q '^port' "$WORK/sink.out" 2>/dev/null; do sleep 0.01; done
    sink_port=$(awk '/^port/ {print $2}' "$WORK/sink.out")
    cat >"$WORK/host.conf" <<CONF
log_level warn;
http { listen 127.0.0.1:$port; }
nats { url $NATS_URL; }
plugin_dir $BUILD/plugins;
plugin http_out;
sink ${name}_$round { use http_out; source ev.orders; batch $BATCH; url http://127.0.0.1:$sink_port/in; $keys }
CONF
    start_gust "$WORK/host.conf" "$port"
    stats=$(sink_wait "$sink_port" "$N")
    stop_pid "$GUST_PID"
    stop_pid "$sink_pid"
    local unique dups noid bodies
    unique=$(json_field '["unique"]' "$stats")
    bodies=$(json_field '["bodies"]' "$stats")
    dups=$(json_field '["duplicates"]' "$stats")
    noid=$(json_field '["no_id"]' "$stats")
    if [ "$unique" != "$N" ] || [ "$dups" != 0 ] || [ "$noid" != 0 ]; then
        echo "$name round $round: unique $unique of $N, duplicates $dups, without an id $noid" >&2
        ok=false
    fi
    if [ "$name" = batch_100 ] && [ $((bodies * 10)) -gt "$N" ]; then
        echo "batch_100 round $round: $bodies requests for $N events: not batched" >&2
        ok=false
    fi
    RATES[$name]="${RATES[$name]:-} $(json_field '["rate"]' "$stats")"
    REQUESTS[$name]="${REQUESTS[$name]:-} $bodies"
}

for round in $(seq 1 "$ROUNDS"); do
    one_round batch_1 "$round" "batch_max 1;" "--service-us $SERVICE_US"
    one_round batch_100 "$round" "batch_max 100; batch_format json_array;" "--service-us $SERVICE_US"
    one_round rate_off "$round" "batch_max 1;"
    one_round rate_on "$round" "batch_max 1; rate 10000000/s;"
done

med() { median ${RATES[$1]}; }
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(round(a / b, 3) if b else 0)" "$1" "$2"; }
list() { echo "[$(echo ${RATES[$1]} | tr ' ' ',')]"; }
reqs() { echo "[$(echo ${REQUESTS[$1]} | tr ' ' ',')]"; }
emit_result sink-batch "$([ "$ok" = true ] && echo ok || echo failed)" <<JSON
{"scenario":"sink-batch","events":$N,"rounds":$ROUNDS,"unit_batch":$BATCH,"batch_far_end_service_us":$SERVICE_US,
 "batch_1":{"rate":$(med batch_1),"rates":$(list batch_1),"requests":$(reqs batch_1)},
 "batch_100":{"rate":$(med batch_100),"rates":$(list batch_100),"requests":$(reqs batch_100)},
 "rate_off":{"rate":$(med rate_off),"rates":$(list rate_off),"requests":$(reqs rate_off)},
 "rate_on":{"rate":$(med rate_on),"rates":$(list rate_on),"requests":$(reqs rate_on),"limit_per_s":10000000},
 "batch_100_over_batch_1":$(ratio "$(med batch_100)" "$(med batch_1)"),
 "rate_on_over_rate_off":$(ratio "$(med rate_on)" "$(med rate_off)"),
 "checks":$ok}
JSON
[ "$ok" = true ]
