#!/usr/bin/env bash
# mqtt-cpu.sh BASE_BUILD [ROUNDS] [RATE] [SECS]: gust's CPU time per MQTT message on the
# edge path, this build ($BUILD) against another (BASE_BUILD), at a fixed QoS 0 rate.
#
#   gust-mqtt-rate-pub -> mosquitto -> mqtt_in -(edge)-> scripts/telemetry.lua -> JetStream
#     -> mqtt_out (topic "tout/{payload.device}") -> mosquitto -> gust-mqtt-check
#
# mqtt-ladder.sh's telemetry workload, at one rate the machine holds (default 12 000/s for
# 4 s, half the readings pass the filter). Each round starts a fresh gust of each build in
# turn (same nats-server and mosquitto), so both see about the same load; a round counts
# only when every expected reading arrived, intact and once. Per round: utime+stime of the
# gust process from /proc/PID/stat over the publishing and draining, divided by the
# readings published, and its threads' context switches per reading. JSON with the
# medians on stdout. On a shared machine the CPU per message moves less than the rates
# the ladder finds, which is why this exists. Writes bench/results/mqtt-cpu.json, with the
# commit and build type of BASE_BUILD beside this build's.
#
#   BUILD=build-rel bench/mqtt-cpu.sh /tmp/base/build 5 12000 4
source "$(dirname "$0")/lib.sh"
BASE=${1:?usage: mqtt-cpu.sh BASE_BUILD [ROUNDS] [RATE] [SECS]}
BASE=$(cd "$BASE" && pwd) # gust runs it from elsewhere: the path must be absolute
ROUNDS=${2:-5}
RATE=${3:-12000}
SECS=${4:-4}
for b in "$BUILD" "$BASE"; do
    [ -x "$b/gust" ] && [ -f "$b/plugins/mqtt.so" ] || { echo "missing $b/gust or its mqtt.so" >&2; exit 1; }
done

start_nats
start_mosquitto

hz=$(getconf CLK_TCK)
n=$((RATE * SECS))
switches() { cat /proc/"$1"/task/*/status | awk '/ctxt_switches/ {s += $2} END {print s}'; }

# one_round BUILD STEP: prints "us_per_msg switches_per_msg"
one_round() {
    local bd=$1 step=$2 t0 sub c0 c1 x0 x1 pub
    GUST=$bd/gust
    HTTP_PORT=$(free_port)
    cat >"$WORK/host.conf" <<CONF
log_level info;
plugin_dir $bd/plugins;
plugin mqtt;
http { listen 127.0.0.1:$HTTP_PORT; }
nats { url $NATS_URL; }
source tsens { use mqtt_in; broker 127.0.0.1:$MQTT_PORT; topic tele/#; subject ev.telemetry; qos 0; }
flow telemetry { script $ROOT/scripts/telemetry.lua; edge tsens; }
sink tout { use mqtt_out; source ev.telemetry.out; broker 127.0.0.1:$MQTT_PORT; topic "tout/{payload.device}"; qos 0; batch 1024; }
CONF
    : >"$WORK/gust.log"
    start_gust "$WORK/host.conf" "$HTTP_PORT"
    for _ in $(seq 1 1000); do
        grep -q "subscribed to" "$WORK/gust.log" && grep -q "\[sink:tout\] connected" "$WORK/gust.log" && break
        sleep 0.01
    done
    t0=$((2000000000000 + step * 10000000))
    "$TOOLS/gust-mqtt-check" 127.0.0.1 "$MQTT_PORT" "tout/#" telemetry "$n" "$RATE" $((SECS + 8)) --t0 "$t0" \
        --id "cpu-$step" >"$WORK/check.json" 2>"$WORK/check.err" &
    sub=$!
    while ! grep -q ready "$WORK/check.err" 2>/dev/null; do sleep 0.01; done
    c0=$(cpu_ticks "$GUST_PID") x0=$(switches "$GUST_PID")
    pub=$("$TOOLS/gust-mqtt-rate-pub" 127.0.0.1 "$MQTT_PORT" tele "$n" "$RATE" --conns 4 --t0 "$t0" || true)
    wait "$sub" || true
    c1=$(cpu_ticks "$GUST_PID") x1=$(switches "$GUST_PID")
    stop_pid "$GUST_PID"
    python3 - "$n" "$((c1 - c0))" "$hz" "$((x1 - x0))" "$pub" "$WORK/check.json" <<'PY'
import json, sys
n, ticks, hz, sw, pub, check = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
p, c = json.loads(pub), json.load(open(check))
ok = p["sent"] == n and c["unique"] == c["expected"] and c["bad"] == 0 and c["duplicates"] == 0 and c["devices_wrong"] == 0
if not ok:
    sys.exit("round incomplete: published %s, check %s" % (p["sent"], json.dumps(c)))
print("%.2f %.3f" % (ticks / hz * 1e6 / n, sw / n))
PY
}

declare -a NEW_US NEW_SW BASE_US BASE_SW
step=0
for r in $(seq 1 "$ROUNDS"); do
    for which in base new; do
        step=$((step + 1))
        bd=$BUILD
        [ "$which" = base ] && bd=$BASE
        read -r us sw < <(one_round "$bd" "$step") || { echo "$which round $r failed" >&2; exit 1; }
        [ -n "$us" ] || { echo "$which round $r failed" >&2; exit 1; }
        echo "  round $r $which: $us us, $sw switches per reading" >&2
        if [ "$which" = base ]; then BASE_US+=("$us") BASE_SW+=("$sw"); else NEW_US+=("$us") NEW_SW+=("$sw"); fi
    done
done
emit_result mqtt-cpu <<JSON
{"scenario":"mqtt-cpu","path":"edge, telemetry flow, QoS 0","rate":$RATE,"seconds":$SECS,"rounds":$ROUNDS,
 "build":"$BUILD","base_build":"$BASE","base":$(python3 "$BENCH_DIR/provenance.py" build "$BASE"),
 "gust_cpu_us_per_reading_median":$(median "${NEW_US[@]}"),"base_gust_cpu_us_per_reading_median":$(median "${BASE_US[@]}"),
 "gust_switches_per_reading_median":$(median "${NEW_SW[@]}"),"base_gust_switches_per_reading_median":$(median "${BASE_SW[@]}"),
 "gust_cpu_us_per_reading":[$(IFS=,; echo "${NEW_US[*]}")],"base_gust_cpu_us_per_reading":[$(IFS=,; echo "${BASE_US[*]}")]}
JSON
