#!/usr/bin/env bash
# multi-flow.sh [PER_FLOW]: 1, 10 and 50 copies of bench_orders.lua in one gust, each
# on its own subjects (ev.m<i> -> ev.m<i>.out). PER_FLOW events per flow are stored
# first; a counter checks every output id; reports the aggregate rate, RSS as the run
# ends, and RSS 11 s later (rss_settled_kb, after gust has handed freed heap back).
# Writes bench/results/multi-flow.json.
source "$(dirname "$0")/lib.sh"
PER=${1:-4000}
start_nats
make_streams
results=()
for flows in 1 10 50; do
    port=$(free_port)
    conf=$WORK/multi-$flows.conf
    printf 'log_level warn;\nhttp { listen 127.0.0.1:%s; }\nnats { url %s; }\n' "$port" "$NATS_URL" >"$conf"
    for i in $(seq 1 "$flows"); do
        sed "s/ev\.orders\.out/ev.m$flows-$i.out/" "$ROOT/scripts/bench_orders.lua" >"$WORK/m$flows-$i.lua"
        echo "flow m$flows-$i { script $WORK/m$flows-$i.lua; source ev.m$flows-$i; }" >>"$conf"
        "$TOOLS/gust-bench-pub" "$NATS_URL" "ev.m$flows-$i" "$PER" $(( (i - 1) * PER + 1 )) >/dev/null
    done
    total=$((flows * PER))
    "$TOOLS/gust-bench-counter" "$NATS_URL" "ev.*.out" "$total" 180 >"$WORK/count.json" 2>"$WORK/counter.err" &
    counter=$!
    PIDS+=("$counter")
    while ! grep -q ready "$WORK/counter.err" 2>/dev/null; do sleep 0.01; done
    start_gust "$conf" "$port"
    wait "$counter" || { echo "counter failed: $(cat "$WORK/count.json")" >&2; exit 1; }
    rss=$(rss_kb "$GUST_PID")
    # gust hands freed heap back every 10 s: what the flows keep once the burst is over.
    sleep 11
    settled=$(rss_kb "$GUST_PID")
    stop_pid "$GUST_PID"
    results+=("{\"flows\":$flows,\"events\":$total,\"count\":$(cat "$WORK/count.json"),\"rss_kb\":$rss,\"rss_settled_kb\":$settled,\"cold_start_ms\":$COLD_START_MS}")
done
echo "{\"scenario\":\"multi-flow\",\"per_flow\":$PER,\"runs\":[$(IFS=,; echo "${results[*]}")]}" | emit_result multi-flow
