#!/usr/bin/env bash
# flow-hop.sh [N] [ROUNDS]: one flow hop, JetStream -> flow (bench_orders.lua) ->
# JetStream, against the bare relay (the same consumer core forwarding unchanged) in
# the same run. N events are stored first; each round starts a fresh durable consumer
# on them and a counter checks every output id. Rounds alternate relay and flow;
# medians are reported. Writes bench/results/flow-hop.json.
source "$(dirname "$0")/lib.sh"
N=${1:-100000}
ROUNDS=${2:-3}

start_nats
make_streams
"$TOOLS/gust-bench-pub" "$NATS_URL" ev.orders "$N" >"$WORK/pub.json"

one_round() { # one_round KIND ROUND: writes "rate rss_kb duplicates" to $WORK/round
    local kind=$1 round=$2 port unit out
    port=$(free_port)
    if [ "$kind" = flow ]; then
        unit="flow hop$round { script $ROOT/scripts/bench_orders.lua; source ev.orders; }"
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
    start_gust "$WORK/host.conf" "$port"
    wait "$counter" || { echo "counter failed: $(cat "$WORK/count.json")" >&2; exit 1; }
    local rss
    rss=$(rss_kb "$GUST_PID")
    stop_pid "$GUST_PID"
    echo "$(json_field '["rate"]' "$(cat "$WORK/count.json")") $rss $(json_field '["duplicates"]' "$(cat "$WORK/count.json")")" >"$WORK/round"
}

flow_rates=() relay_rates=() flow_rss=() relay_rss=()
for r in $(seq 1 "$ROUNDS"); do
    # In this shell, not a subshell: the EXIT trap must see every PID it started.
    one_round relay "r$r"; read -r rate rss dup <"$WORK/round"; relay_rates+=("$rate"); relay_rss+=("$rss")
    one_round flow "f$r"; read -r rate rss dup <"$WORK/round"; flow_rates+=("$rate"); flow_rss+=("$rss")
done
flow=$(median "${flow_rates[@]}")
relay=$(median "${relay_rates[@]}")
emit_result flow-hop <<JSON
{"scenario":"flow-hop","events":$N,"rounds":$ROUNDS,
 "flow_rate_median":$flow,"relay_rate_median":$relay,
 "ratio_flow_to_relay":$(awk -v a="$flow" -v b="$relay" 'BEGIN{printf "%.2f", a/b}'),
 "flow_rates":[$(IFS=,; echo "${flow_rates[*]}")],"relay_rates":[$(IFS=,; echo "${relay_rates[*]}")],
 "flow_rss_kb":$(median "${flow_rss[@]}"),"relay_rss_kb":$(median "${relay_rss[@]}"),
 "publisher":$(cat "$WORK/pub.json")}
JSON
