#!/usr/bin/env bash
# replay.sh [N] [ROUNDS]: the speed of `gust replay` over N stored events: the orders flow
# (bench_orders.lua) as the unit's script and the same file as the candidate, so both
# sides run every event and every input must come out identical; against, in the same
# run, a replay whose two sides emit nothing (an empty on_event: reading and decoding
# the events, and comparing nothing). Each replay's summary is checked (N inputs, N
# identical, no errors) before its rate, N over the command's wall time (start to exit,
# the range planning included), is reported. Rounds take turns; medians are reported.
source "$(dirname "$0")/lib.sh"
N=${1:-100000}
ROUNDS=${2:-3}

start_nats
make_streams
"$TOOLS/gust-bench-pub" "$NATS_URL" ev.orders "$N" >"$WORK/pub.json"
printf 'return { on_event = function(ev) end }\n' >"$WORK/empty.lua"
for kind in orders empty; do
    script=$ROOT/scripts/bench_orders.lua
    [ "$kind" = empty ] && script=$WORK/empty.lua
    cat >"$WORK/$kind.conf" <<CONF
log_level warn;
nats { url $NATS_URL; }
flow $kind { script $script; source ev.orders; }
CONF
done

one_replay() { # one_replay KIND: prints the rate
    local kind=$1 script t0 t1 out
    script=$ROOT/scripts/bench_orders.lua
    [ "$kind" = empty ] && script=$WORK/empty.lua
    t0=$(date +%s.%N)
    out=$("$GUST" replay -c "$WORK/$kind.conf" --unit "$kind" --script "$script" --last "$N") || {
        echo "replay $kind failed: $out" >&2
        exit 1
    }
    t1=$(date +%s.%N)
    python3 - "$N" "$out" <<'PY' || exit 1
import json, sys
n, out = int(sys.argv[1]), sys.argv[2]
s = json.loads([l for l in out.splitlines() if l.startswith("summary: ")][0][9:])
if (s["inputs"], s["identical"], s["differing"], s["errors"]) != (n, n, 0, {"current": 0, "candidate": 0}):
    sys.exit("replay summary wrong: %s" % s)
PY
    awk -v n="$N" -v a="$t0" -v b="$t1" 'BEGIN{printf "%.0f", n / (b - a)}'
}

orders_rates=() empty_rates=()
for r in $(seq 1 "$ROUNDS"); do
    orders_rates+=("$(one_replay orders)")
    empty_rates+=("$(one_replay empty)")
done
orders=$(median "${orders_rates[@]}")
empty=$(median "${empty_rates[@]}")
emit_result replay <<JSON
{"scenario":"replay","events":$N,"rounds":$ROUNDS,
 "replay_rate_median":$orders,"empty_replay_rate_median":$empty,
 "ratio_replay_to_empty":$(awk -v a="$orders" -v b="$empty" 'BEGIN{printf "%.2f", a/b}'),
 "replay_rates":[$(IFS=,; echo "${orders_rates[*]}")],"empty_replay_rates":[$(IFS=,; echo "${empty_rates[*]}")],
 "publisher":$(cat "$WORK/pub.json")}
JSON
