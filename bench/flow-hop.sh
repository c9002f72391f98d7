#!/usr/bin/env bash
# flow-hop.sh [N] [ROUNDS]: one flow hop, JetStream -> flow (bench_orders.lua) ->
# JetStream, against the bare relay (the same consumer core forwarding unchanged) in
# the same run, and the flow with durable state (flow_state.lua: the same plus one
# state.incr per event over 1 000 keys, on NATS KV). N events are stored first; each
# round starts a fresh durable consumer on them and a counter checks every output id;
# the state round also checks that its 1 000 counters add up to N. Each batch writes each
# key it touched once, and the order numbers are consecutive, so at the default batch of
# 256 every event is a KV write; the flow and the state variant run a second time with a
# batch of STATE_BATCH (default 4096), where each key is touched about four times a
# batch. Rounds take turns (relay, flow, state, flow and state at STATE_BATCH); medians
# are reported, with the CPU each round cost gust and nats-server per event (from
# /proc/PID/stat: on a machine shared with other work, the figure to compare builds by).
# Then the bus alone does the same JetStream work (gust-bench-bus relay and staterelay:
# the hop, and the hop with one compare-and-set KV write per key a batch touches)
# ROUNDS times in turn: bus_floor_state_to_relay is what the state / flow ratio cannot
# pass on this machine. Writes bench/results/flow-hop.json.
source "$(dirname "$0")/lib.sh"
N=${1:-100000}
ROUNDS=${2:-3}
STATE_BATCH=${STATE_BATCH:-4096}

start_nats
make_streams
"$TOOLS/gust-bench-pub" "$NATS_URL" ev.orders "$N" >"$WORK/pub.json"

CLK_TCK=$(getconf CLK_TCK)

one_round() { # one_round KIND ROUND [BATCH]: writes "rate rss_kb duplicates gust_us nats_us" to $WORK/round
    local kind=$1 round=$2 batch=${3:-256} port unit out
    port=$(free_port)
    if [ "$kind" = flow ]; then
        unit="flow hop$round { script $ROOT/scripts/bench_orders.lua; source ev.orders; batch $batch; }"
        out=ev.orders.out
    elif [ "$kind" = state ]; then
        unit="flow hop$round { script $BENCH_DIR/flow_state.lua; source ev.orders; lua_path $ROOT/scripts; batch $batch; }"
        out=ev.orders.out
    else
        unit="relay hop$round { source ev.orders; to ev.relay.out; }"
        out=ev.relay.out
    fi
    cat >"$WORK/host.conf" <<CONF
log_level warn;
http { listen 127.0.0.1:$port; }
nats { url $NATS_URL; }
$unit
CONF
    "$TOOLS/gust-bench-counter" "$NATS_URL" "$out" "$N" 120 >"$WORK/count.json" 2>"$WORK/counter.err" &
    local counter=$!
    PIDS+=("$counter")
    while ! grep -q ready "$WORK/counter.err" 2>/dev/null; do sleep 0.01; done
    local nats0 nats1 gust1
    nats0=$(cpu_ticks "$NATS_PID")
    start_gust "$WORK/host.conf" "$port"
    wait "$counter" || { echo "counter failed: $(cat "$WORK/count.json")" >&2; exit 1; }
    gust1=$(cpu_ticks "$GUST_PID")
    nats1=$(cpu_ticks "$NATS_PID")
    local rss
    rss=$(rss_kb "$GUST_PID")
    stop_pid "$GUST_PID"
    if [ "$kind" = state ]; then
        check_counters "hop$round"
    fi
    # CPU microseconds per event: gust's whole life (its start included), nats-server's
    # from gust's start to the last output counted.
    local us=$((1000000 / CLK_TCK))
    echo "$(json_field '["rate"]' "$(cat "$WORK/count.json")") $rss $(json_field '["duplicates"]' "$(cat "$WORK/count.json")")" \
        "$(awk -v t="$gust1" -v u="$us" -v n="$N" 'BEGIN{printf "%.2f", t*u/n}')" \
        "$(awk -v t="$((nats1 - nats0))" -v u="$us" -v n="$N" 'BEGIN{printf "%.2f", t*u/n}')" >"$WORK/round"
}

# check_counters UNIT: the unit's state keys are the 1 000 counters and they add up to N.
check_counters() {
    "$BUILD/tests/gust-stream-read" "$NATS_URL" KV_GUST_FLOW_STATE --last "\$KV.GUST_FLOW_STATE.$1.>" >"$WORK/state.out"
    python3 - "$WORK/state.out" "$N" <<'PY' || exit 1
import json, sys
raw, want, i, values = open(sys.argv[1], "rb").read(), int(sys.argv[2]), 0, []
while i < len(raw):
    nl = raw.index(b"\n", i)
    n = int(raw[i:nl].split(b" ")[2])
    values.append(json.loads(raw[nl + 1:nl + 1 + n])["v"])
    i = nl + 1 + n + 1
if len(values) != min(1000, want) or sum(values) != want:
    sys.exit("state check failed: %d keys, sum %s, want %d" % (len(values), sum(values), want))
PY
}

flow_rates=() relay_rates=() state_rates=() flow_rss=() relay_rss=() state_rss=() batched_rates=() batched_rss=() bigflow_rates=()
relay_gcpu=() relay_ncpu=() flow_gcpu=() flow_ncpu=() state_gcpu=() state_ncpu=()
for r in $(seq 1 "$ROUNDS"); do
    # In this shell, not a subshell: the EXIT trap must see every PID it started.
    one_round relay "r$r"; read -r rate rss dup gc nc <"$WORK/round"; relay_rates+=("$rate"); relay_rss+=("$rss")
    relay_gcpu+=("$gc"); relay_ncpu+=("$nc")
    one_round flow "f$r"; read -r rate rss dup gc nc <"$WORK/round"; flow_rates+=("$rate"); flow_rss+=("$rss")
    flow_gcpu+=("$gc"); flow_ncpu+=("$nc")
    one_round state "s$r"; read -r rate rss dup gc nc <"$WORK/round"; state_rates+=("$rate"); state_rss+=("$rss")
    state_gcpu+=("$gc"); state_ncpu+=("$nc")
    one_round flow "g$r" "$STATE_BATCH"; read -r rate rss dup gc nc <"$WORK/round"; bigflow_rates+=("$rate")
    one_round state "b$r" "$STATE_BATCH"; read -r rate rss dup gc nc <"$WORK/round"; batched_rates+=("$rate"); batched_rss+=("$rss")
done
# The bus alone, the same JetStream work in turn: the hop, and the hop with the state's
# compare-and-set writes (1 000 keys, batches of 256).
bus_relay_rates=() bus_state_rates=()
for r in $(seq 1 "$ROUNDS"); do
    out=$("$TOOLS/gust-bench-bus" "$NATS_URL" relay 256 "$N" "HOPBUS$r") || { echo "bus relay failed" >&2; exit 1; }
    bus_relay_rates+=("$(json_field '["rate"]' "$out")")
    out=$("$TOOLS/gust-bench-bus" "$NATS_URL" staterelay 256 "$N" "HOPSTATE$r" 1000) || { echo "bus staterelay failed" >&2; exit 1; }
    bus_state_rates+=("$(json_field '["rate"]' "$out")")
done
bus_relay=$(median "${bus_relay_rates[@]}")
bus_state=$(median "${bus_state_rates[@]}")
flow=$(median "${flow_rates[@]}")
relay=$(median "${relay_rates[@]}")
state=$(median "${state_rates[@]}")
batched=$(median "${batched_rates[@]}")
bigflow=$(median "${bigflow_rates[@]}")
emit_result flow-hop <<JSON
{"scenario":"flow-hop","events":$N,"rounds":$ROUNDS,
 "flow_rate_median":$flow,"relay_rate_median":$relay,
 "ratio_flow_to_relay":$(awk -v a="$flow" -v b="$relay" 'BEGIN{printf "%.2f", a/b}'),
 "flow_rates":[$(IFS=,; echo "${flow_rates[*]}")],"relay_rates":[$(IFS=,; echo "${relay_rates[*]}")],
 "flow_rss_kb":$(median "${flow_rss[@]}"),"relay_rss_kb":$(median "${relay_rss[@]}"),
 "state_rate_median":$state,"ratio_state_to_flow":$(awk -v a="$state" -v b="$flow" 'BEGIN{printf "%.2f", a/b}'),
 "state_rates":[$(IFS=,; echo "${state_rates[*]}")],"state_rss_kb":$(median "${state_rss[@]}"),
 "state_batch":$STATE_BATCH,"state_batched_rate_median":$batched,"flow_batched_rate_median":$bigflow,
 "ratio_state_batched_to_flow_batched":$(awk -v a="$batched" -v b="$bigflow" 'BEGIN{printf "%.2f", a/b}'),
 "flow_batched_rates":[$(IFS=,; echo "${bigflow_rates[*]}")],
 "state_batched_rates":[$(IFS=,; echo "${batched_rates[*]}")],"state_batched_rss_kb":$(median "${batched_rss[@]}"),
 "cpu_us_per_event":{"relay":{"gust":$(median "${relay_gcpu[@]}"),"nats":$(median "${relay_ncpu[@]}")},
  "flow":{"gust":$(median "${flow_gcpu[@]}"),"nats":$(median "${flow_ncpu[@]}")},
  "state":{"gust":$(median "${state_gcpu[@]}"),"nats":$(median "${state_ncpu[@]}")}},
 "bus_relay_rate_median":$bus_relay,"bus_state_rate_median":$bus_state,
 "bus_floor_state_to_relay":$(awk -v a="$bus_state" -v b="$bus_relay" 'BEGIN{printf "%.2f", a/b}'),
 "publisher":$(cat "$WORK/pub.json")}
JSON
