#!/usr/bin/env bash
# Smoke test of bench/brokers.sh: one round of 1000 messages through each broker
# (gust, the broker's own relay, the bus alone); checks that every broker's section is
# there with its every-id-once check, both ceilings and the ratio to the lower one, that the
# file records where it comes from, and that bench/report.py makes a row of each broker
# from it. Rates are printed, never judged. Then bad sizes: a usage message, exit non-zero.
#
#   bench/tools/test_brokers.sh [BUILD_DIR]    (default build)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=$(cd "${1:-build}" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

BUILD=$BUILD RESULT=$TMP/results/brokers.json bench/brokers.sh 1000 1 >"$TMP/stdout.json"
cmp -s "$TMP/stdout.json" "$TMP/results/brokers.json" || { echo "FAIL: stdout and RESULT differ"; exit 1; }
python3 - "$TMP/results/brokers.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def need(cond, what):
    if not cond:
        sys.exit("FAIL: %s" % what)
need(d["scenario"] == "brokers" and d["ok"] is True and d["messages"] == 1000 and d["rounds"] == 1, "header: %s" % d)
need(d["command"] == "bench/brokers.sh 1000 1", "command %s" % d["command"])
for k in ("commit", "cpu_model", "cores", "build_type", "date", "uptime", "machine", "versions"):
    need(k in d, "no %s" % k)
for name in ("kafka", "redis", "amqp"):
    b = d[name]
    need(b["every_id_once"] is True and len(b["rates"]) == 1 and b["rate_median"] > 0, "%s: %s" % (name, b))
    broker, bus = b["broker_ceiling"]["rate_median"], b["bus_ceiling"]["rate_median"]
    need(broker > 0 and bus > 0 and b["gust_cpu_us_per_msg_median"] > 0, "%s ceilings: %s" % (name, b))
    need(abs(b["ratio_to_lower_ceiling"] - b["rate_median"] / min(broker, bus)) < 0.01, "%s ratio: %s" % (name, b))
    need(b["met"] == (b["ratio_to_lower_ceiling"] >= 0.8), "%s met: %s" % (name, b))
    print("ok: %s: gust %s/s, the broker's relay %s/s, the bus %s/s (not judged)" % (name, b["rate_median"], broker, bus))
PY
cp bench/README.md "$TMP/README.md"
REPORT_RESULTS=$TMP/results REPORT_PLOTS=$TMP/plots REPORT_README=$TMP/README.md bench/report.sh >/dev/null
for row in "| Kafka (librdkafka's mock cluster): kafka_in" "| Redis Streams: redis_in" "| RabbitMQ: amqp_in"; do
    grep -F "$row" "$TMP/README.md" | grep -qF "of the lower ceiling" || { echo "FAIL: report.py has no row $row"; exit 1; }
done
echo "ok: report.py reads brokers.json"

if BUILD=$BUILD RESULT= bench/brokers.sh 1 2>"$TMP/err" >/dev/null; then
    echo "FAIL: brokers.sh took N=1"; exit 1
fi
grep -q "usage: bench/brokers.sh" "$TMP/err" || { echo "FAIL: no usage message: $(cat "$TMP/err")"; exit 1; }
echo "brokers smoke test passed"
