#!/usr/bin/env bash
# broker-mqtt.sh [N] [ROUNDS] [BATCH]: MQTT round trips through gust, QoS 1 both ways:
#   gust-mqtt-pub -> mosquitto -> mqtt_in -> JetStream -> mqtt_out -> mosquitto -> gust-mqtt-sub
# against two baselines in the same run, with the same tools and broker: mosquitto's own
# pub -> sub at QoS 1, and the bare relay (gust-mqtt-relay: subscribe, publish each again,
# both QoS 1, no JetStream), which crosses the broker twice as gust's path does. Every
# message is checked at the subscriber (count, unique ids, none foreign); a round that
# misses one fails the run. Rounds take turns (pub -> sub, relay, gust); medians are
# reported. A round trip rate is N / (last new id at the subscriber - publisher
# start). BATCH is the mqtt_out unit's fetch batch (default 1024). Writes
# bench/results/broker-mqtt.json.
#
# The broker is configured as the e2e tests do and as a deployment should: Nagle off
# (`set_tcp_nodelay true`), max_inflight_messages 1000 (its default of 20 QoS 1 messages
# in flight per client caps mqtt_in's pipeline), max_queued_messages 0 (the default 1000
# drops QoS 1 messages for a persistent session that is offline or slow).
source "$(dirname "$0")/lib.sh"
N=${1:-50000}
ROUNDS=${2:-3}
BATCH=${3:-1024}
PUB=$TOOLS/gust-mqtt-pub
SUB=$TOOLS/gust-mqtt-sub
RELAY=$TOOLS/gust-mqtt-relay
for f in "$PUB" "$SUB" "$RELAY" "$BUILD/plugins/mqtt.so"; do
    [ -x "$f" ] || [ -f "$f" ] || { echo "missing $f: build first" >&2; exit 1; }
done

start_nats
start_mosquitto "max_inflight_messages 1000"

HTTP_PORT=$(free_port)
cat >"$WORK/host.conf" <<CONF
log_level info;
plugin_dir $BUILD/plugins;
plugin mqtt;
http { listen 127.0.0.1:$HTTP_PORT; }
nats { url $NATS_URL; }
source min { use mqtt_in; broker 127.0.0.1:$MQTT_PORT; topic in/#; subject ev.mqtt.in; qos 1; }
sink mout { use mqtt_out; source ev.mqtt.in; broker 127.0.0.1:$MQTT_PORT; topic out/all; qos 1; batch $BATCH; }
CONF
start_gust "$WORK/host.conf" "$HTTP_PORT"
for _ in $(seq 1 500); do grep -q "subscribed to in/#" "$WORK/gust.log" && break; sleep 0.01; done
"$RELAY" 127.0.0.1 "$MQTT_PORT" 'relay/in/#' relay/out/all --id bench-relay >"$WORK/relay.json" 2>"$WORK/relay.err" &
PIDS+=("$!")
while ! grep -q ready "$WORK/relay.err" 2>/dev/null; do sleep 0.01; done


# one_round KIND ROUND: prints "rate duplicates out_of_order"
one_round() {
    local kind=$1 r=$2 in out start sub
    start=$((r * 10000000))
    case $kind in
    gust) in=in/dev out=out/# ;;
    relay) in=relay/in/dev out=relay/out/# ;;
    *) in=base/dev out=base/# ;;
    esac
    "$SUB" 127.0.0.1 "$MQTT_PORT" "$out" "$N" 300 --start "$start" --id "bench-$kind-$r" \
        >"$WORK/sub.json" 2>"$WORK/sub.err" &
    sub=$!
    while ! grep -q ready "$WORK/sub.err" 2>/dev/null; do sleep 0.01; done
    "$PUB" 127.0.0.1 "$MQTT_PORT" "$in" "$N" --start "$start" --window 1000 --id "bench-pub-$r" >"$WORK/pub.json"
    wait "$sub" || { echo "$kind round $r lost messages: $(cat "$WORK/sub.json")" >&2; exit 1; }
    python3 - "$WORK/pub.json" "$WORK/sub.json" "$N" <<'PY'
import json, sys
p, s, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
assert s["unique"] == n and s["missing"] == 0 and s["foreign"] == 0, s
print("%.0f %d %d" % (n / ((s["last_ms"] - p["start_ms"]) / 1e3), s["duplicates"], s["out_of_order"]))
PY
}

gust_rates=() base_rates=() relay_rates=() dups=0 ooo=0
g0=$(cpu_ticks "$GUST_PID") m0=$(cpu_ticks "$MOSQ_PID")
for r in $(seq 1 "$ROUNDS"); do
    read -r rate d o < <(one_round base "$((3 * r))"); base_rates+=("$rate")
    read -r rate d o < <(one_round relay "$((3 * r + 1))"); relay_rates+=("$rate")
    read -r rate d o < <(one_round gust "$((3 * r + 2))"); gust_rates+=("$rate")
    dups=$((dups + d)) ooo=$((ooo + o))
done
g1=$(cpu_ticks "$GUST_PID") m1=$(cpu_ticks "$MOSQ_PID")
hz=$(getconf CLK_TCK)
gust=$(median "${gust_rates[@]}")
base=$(median "${base_rates[@]}")
relay=$(median "${relay_rates[@]}")
emit_result broker-mqtt <<JSON
{"scenario":"broker-mqtt","messages":$N,"rounds":$ROUNDS,"qos":1,"sink_batch":$BATCH,
 "round_trips_per_s_median":$gust,"mosquitto_pub_sub_per_s_median":$base,
 "bare_relay_round_trips_per_s_median":$relay,
 "ratio_gust_to_mosquitto":$(awk -v a="$gust" -v b="$base" 'BEGIN{printf "%.2f", a/b}'),
 "ratio_gust_to_bare_relay":$(awk -v a="$gust" -v b="$relay" 'BEGIN{printf "%.2f", a/b}'),
 "round_trips_per_s":[$(IFS=,; echo "${gust_rates[*]}")],"mosquitto_pub_sub_per_s":[$(IFS=,; echo "${base_rates[*]}")],
 "bare_relay_round_trips_per_s":[$(IFS=,; echo "${relay_rates[*]}")],
 "gust_duplicates":$dups,"gust_out_of_order":$ooo,
 "gust_cpu_s":$(awk -v t=$((g1 - g0)) -v h="$hz" 'BEGIN{printf "%.2f", t/h}'),
 "mosquitto_cpu_s_all_rounds":$(awk -v t=$((m1 - m0)) -v h="$hz" 'BEGIN{printf "%.2f", t/h}'),
 "gust_rss_kb":$(rss_kb "$GUST_PID"),"cold_start_ms":$COLD_START_MS}
JSON
