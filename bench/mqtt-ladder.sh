#!/usr/bin/env bash
# mqtt-ladder.sh: the highest MQTT QoS 0 rate gust takes with zero loss on the edge path,
# against mosquitto's own pub -> sub ceiling measured with the same tools in the same run.
#
#   baseline   gust-mqtt-rate-pub -> mosquitto -> gust-mqtt-check (all readings)
#   telemetry  gust-mqtt-rate-pub -> mosquitto -> mqtt_in -(edge, in memory)-> Lua flow
#              scripts/telemetry.lua (1 000 devices, v >= 50 passes) -> JetStream ->
#              mqtt_out (topic "out/{payload.device}") -> mosquitto -> gust-mqtt-check
#   windows    ... mqtt_in -(edge)-> detect rules/device_window.vpl (per-device 10 s
#              event-time windows) -> JetStream -> mqtt_out -> mosquitto -> gust-mqtt-check
#
# Each workload climbs a ladder of fixed rates over CONNS publisher connections: +10 000/s
# until a step fails, then +2 500/s from the last good rate, then +1 000/s. A step publishes
# for STEP_S seconds; it passes when every expected message arrives, with the right
# content (each reading's device and v, the filter's level; each window's count, sum, min,
# max), no duplicates, per-device counts and sums equal, and the workload kept up: the
# last output (telemetry, baseline) or the detect unit's last reading (windows) came
# within GRACE_MS of the publisher's end, so a growing backlog does not count as keeping
# up. A step the publisher itself could not hold (achieved < 97% of the rate, which a
# busy machine causes) fails, marked publisher_limited, and the ladder goes on with finer
# steps below it; "publisher_limited" in the result says a workload met one. The three
# ladders take turns, step by step, in one run. JSON on stdout and in
# bench/results/mqtt-ladder.json (emit_result in lib.sh).
#
#   STEP_S=4 CONNS=4 GRACE_MS=1000 MAX_RATE=150000 bench/mqtt-ladder.sh
source "$(dirname "$0")/lib.sh"
STEP_S=${STEP_S:-4}
CONNS=${CONNS:-4}
GRACE_MS=${GRACE_MS:-1000}
MAX_RATE=${MAX_RATE:-150000}
RATE_PUB=$TOOLS/gust-mqtt-rate-pub
CHECK=$TOOLS/gust-mqtt-check
for f in "$RATE_PUB" "$CHECK" "$BUILD/plugins/mqtt.so"; do
    [ -e "$f" ] || { echo "missing $f: build first" >&2; exit 1; }
done

start_nats
start_mosquitto

# One gust runs both workloads, each on its own topics, so that the ladders can take
# turns with the baseline: on a shared machine the load moves from minute to minute, and
# interleaving the steps puts each rate of every workload under about the same load.
HTTP_PORT=$(free_port)
B=127.0.0.1:$MQTT_PORT
cat >"$WORK/host.conf" <<CONF
log_level info;
plugin_dir $BUILD/plugins;
plugin mqtt;
http { listen 127.0.0.1:$HTTP_PORT; }
nats { url $NATS_URL; }
source tsens { use mqtt_in; broker $B; topic tele/#; subject ev.telemetry; qos 0; }
flow telemetry { script $ROOT/scripts/telemetry.lua; edge tsens; }
sink tout { use mqtt_out; source ev.telemetry.out; broker $B; topic "tout/{payload.device}"; qos 0; batch 1024; }
source wsens { use mqtt_in; broker $B; topic win/#; subject ev.telemetry; qos 0; }
detect windows { rules $ROOT/rules/device_window.vpl; edge wsens; }
sink wout { use mqtt_out; source ev.telemetry.windows; broker $B; topic "wout/{payload.device}"; qos 0; batch 1024; }
CONF
start_gust "$WORK/host.conf" "$HTTP_PORT"
for _ in $(seq 1 1000); do [ "$(grep -c "subscribed to" "$WORK/gust.log")" -ge 2 ] && break; sleep 0.01; done

units_json() { curl -s --noproxy "*" "http://127.0.0.1:$HTTP_PORT/units"; }
# events_ok of unit $1 (no python here: it is polled, and python starts slowly on a busy machine)
unit_ok() { units_json | grep -o "\"name\":\"$1\"[^}]*" | sed 's/.*"events_ok":\([0-9]*\).*/\1/'; }

STEP_NO=0 # numbers the steps (set by the caller: run_step runs in a subshell)
# run_step WORKLOAD RATE: prints one JSON object for the step
run_step() {
    local kind=$1 rate=$2 n t0 mode topic filter sub base_ok pub_json settle_ms=0
    n=$((rate * STEP_S))
    t0=$((2000000000000 + STEP_NO * 10000000)) # event time: each step far after the last's flush
    case $kind in
        baseline) mode=all; topic=base; filter="base/#" ;;
        telemetry) mode=telemetry; topic=tele; filter="tout/#" ;;
        windows) mode=windows; topic=win; filter="wout/#" ;;
    esac
    "$CHECK" 127.0.0.1 "$MQTT_PORT" "$filter" "$mode" "$n" "$rate" $((STEP_S + 8)) --t0 "$t0" --id "ladder-$STEP_NO" \
        >"$WORK/check.json" 2>"$WORK/check.err" &
    sub=$!
    while ! grep -q ready "$WORK/check.err" 2>/dev/null; do sleep 0.01; done
    [ "$kind" = windows ] && base_ok=$(unit_ok windows)
    pub_json=$("$RATE_PUB" 127.0.0.1 "$MQTT_PORT" "$topic" "$n" "$rate" --conns "$CONNS" --t0 "$t0" || true)
    if [ "$kind" = windows ]; then
        # The windows close on event time: once the unit has every reading (or nothing more
        # comes for a second), a later reading closes them. settle_ms: end of publishing
        # to the unit's last reading.
        local last=-1 same=0 ok start now
        start=$(date +%s%3N)
        while :; do
            now=$(date +%s%3N) # before the poll: a first poll that finds them all counts as 0
            ok=$(( $(unit_ok windows) - base_ok ))
            [ -n "${DEBUG:-}" ] && echo "  ok=$ok n=$n" >&2
            [ "$ok" -ge "$n" ] && break
            if [ "$ok" = "$last" ]; then same=$((same + 1)); else same=0; last=$ok; fi
            [ "$same" -ge 20 ] && { echo "  windows: the unit took $ok of $n readings" >&2; break; }
            sleep 0.05
        done
        settle_ms=$((now - start))
        "$RATE_PUB" 127.0.0.1 "$MQTT_PORT" "$topic" "$n" "$rate" --t0 "$t0" --flush >/dev/null
    fi
    wait "$sub" || true
    python3 - "$kind" "$rate" "$n" "$pub_json" "$WORK/check.json" "$GRACE_MS" "$settle_ms" <<'PY'
import json, sys
kind, rate, n, pub, check, grace, settle = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], float(sys.argv[6]), float(sys.argv[7])
p = json.loads(pub) if pub.strip() else {"sent": 0, "rate": 0, "max_behind_ms": 0, "end_ms": 0}
c = json.load(open(check))
lag = settle if kind == "windows" else (c["last_ms"] - p["end_ms"] if c["unique"] else None)
complete = c["unique"] == c["expected"] and c["bad"] == 0 and c["duplicates"] == 0 and c["devices_wrong"] == 0
limited = p["sent"] < n or p["rate"] < 0.97 * rate
ok = complete and lag is not None and lag <= grace and not limited
print(json.dumps({"rate": rate, "pass": ok, "publisher_limited": limited, "published": p["sent"],
                  "published_rate": p["rate"], "publisher_max_behind_ms": p["max_behind_ms"],
                  "expected": c["expected"], "arrived": c["unique"], "missing": c["missing"], "bad": c["bad"],
                  "duplicates": c["duplicates"], "devices_wrong": c["devices_wrong"],
                  "lag_ms": None if lag is None else round(lag, 1)}))
PY
}

# The ladders, taking turns: each workload climbs by 10 000/s until a step fails, then by
# 2 500/s from its last good rate, then by 1 000/s.
KINDS=(baseline telemetry windows)
SIZES=(10000 2500 1000)
declare -A LO HI SI DONE LIMITED STEPS
for k in "${KINDS[@]}"; do LO[$k]=0 HI[$k]=$((MAX_RATE + 1)) SI[$k]=0 DONE[$k]=0 LIMITED[$k]=false STEPS[$k]=""; done

# next_rate KIND: sets NEXT to the next rate to try (moving on to finer steps when the
# current one has no room left), or empty when that ladder is done
next_rate() {
    local k=$1 r
    NEXT=""
    while [ "${SI[$k]}" -lt 3 ]; do
        r=$(( ${LO[$k]} + ${SIZES[${SI[$k]}]} ))
        if [ "$r" -lt "${HI[$k]}" ] && [ "$r" -le "$MAX_RATE" ]; then NEXT=$r; return; fi
        SI[$k]=$(( ${SI[$k]} + 1 ))
    done
}

hz=$(getconf CLK_TCK)
T_START=$(date +%s)
g0=$(cpu_ticks "$GUST_PID")
while :; do
    active=0
    for k in "${KINDS[@]}"; do
        [ "${DONE[$k]}" = 1 ] && continue
        next_rate "$k"
        r=$NEXT
        if [ -z "$r" ]; then DONE[$k]=1; continue; fi
        active=1
        STEP_NO=$((STEP_NO + 1))
        line=$(run_step "$k" "$r")
        echo "  $k $r/s: $line" >&2
        STEPS[$k]="${STEPS[$k]:+${STEPS[$k]},}$line"
        if echo "$line" | grep -q '"pass": true'; then
            LO[$k]=$r
        else
            HI[$k]=$r SI[$k]=$(( ${SI[$k]} + 1 ))
            if echo "$line" | grep -q '"publisher_limited": true'; then LIMITED[$k]=true; fi
        fi
    done
    [ "$active" = 1 ] || break
done
GUST_CPU=$(awk -v t=$(($(cpu_ticks "$GUST_PID") - g0)) -v h="$hz" 'BEGIN{printf "%.2f", t/h}')
GUST_RSS=$(rss_kb "$GUST_PID")

python3 - "${LO[baseline]}" "${LO[telemetry]}" "${LO[windows]}" "${LIMITED[baseline]}" "${LIMITED[telemetry]}" \
    "${LIMITED[windows]}" "[${STEPS[baseline]}]" "[${STEPS[telemetry]}]" "[${STEPS[windows]}]" "$GUST_RSS" \
    "$GUST_CPU" "$STEP_S" "$CONNS" "$GRACE_MS" "$(( $(date +%s) - T_START ))" "$COLD_START_MS" <<'PY' >"$WORK/ladder.json"
import json, sys
a = sys.argv[1:]
b, tel, win = int(a[0]), int(a[1]), int(a[2])
def ratio(x):
    return round(x / b, 2) if b else None
out = {
    "scenario": "mqtt-ladder", "qos": 0, "step_seconds": int(a[11]), "publisher_connections": int(a[12]),
    "grace_ms": float(a[13]), "devices": 1000,
    "mosquitto_pub_sub_ceiling_per_s": b, "telemetry_ceiling_per_s": tel, "windows_ceiling_per_s": win,
    "telemetry_ratio_to_mosquitto": ratio(tel), "windows_ratio_to_mosquitto": ratio(win), "target_ratio": 0.7,
    "met_publisher_limited_steps": {"baseline": a[3] == "true", "telemetry": a[4] == "true", "windows": a[5] == "true"},
    "gust_rss_kb": int(a[9]), "gust_cpu_s": float(a[10]), "gust_cold_start_ms": float(a[15]),
    "run_seconds": int(a[14]),
    "steps": {"baseline": json.loads(a[6]), "telemetry": json.loads(a[7]), "windows": json.loads(a[8])},
}
print(json.dumps(out))
PY
emit_result mqtt-ladder <"$WORK/ladder.json"
