#!/usr/bin/env bash
# Smoke test of bench/bus.sh: one round with tiny sizes against a fresh nats-server; checks
# that every section of the JSON is there, that its counts match the sizes asked for, and
# that it records where it comes from (bench/provenance.py: the fields every results file
# carries). Rates are printed, never judged.
#
#   bench/tools/test_bus.sh [BUILD_DIR]    (default build)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=$(cd "${1:-build}" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

BUILD=$BUILD RESULT=$TMP/bus.json BUS_ROUNDS=1 BUS_CORE_N=3000 BUS_CORE_KIB_N=2000 BUS_JS_N=1000 \
    BUS_FETCH_N=1000 BUS_RELAY_N=700 BUS_RELAY_BATCH=64 BUS_PATH_N=600 BUS_PATH_PACED_N=10 BUS_REQ_N=50 BUS_FLOOD_PUBS=3 BUS_FLOOD_N=400 \
    bench/bus.sh >"$TMP/stdout.json"
cmp -s "$TMP/stdout.json" "$TMP/bus.json" || { echo "FAIL: stdout and RESULT differ"; exit 1; }
# What the provenance must say of this tree and build.
want_commit=unknown
if git rev-parse --git-dir >/dev/null 2>&1; then want_commit=$(git describe --always); fi
want_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
python3 - "$TMP/bus.json" "$want_commit" "${want_type:-RelWithDebInfo}" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
want_commit, want_type = sys.argv[2], sys.argv[3]
def need(cond, what):
    if not cond:
        sys.exit("FAIL: %s" % what)
need(d["scenario"] == "bus" and d["ok"] is True and d["rounds"] == 1, "header: %s" % d)
for k in ("machine", "nats_server", "nats_c", "commit", "cpu_model", "cores", "build_type", "date", "uptime"):
    need(k in d, "no %s" % k)
need(list(d)[:8] == ["scenario", "commit", "cpu_model", "cores", "build_type", "date", "uptime", "command"],
     "provenance not after the scenario: %s" % list(d)[:8])
need(d["command"] == "bench/bus.sh", "command %s" % d["command"])
need(re.sub("-dirty$", "", d["commit"]) == want_commit, "commit %s, want %s" % (d["commit"], want_commit))
need(d["build_type"] == want_type, "build_type %s, want %s" % (d["build_type"], want_type))
need(isinstance(d["cores"], int) and d["cores"] >= 1 and d["cpu_model"], "cpu %s, cores %s" % (d["cpu_model"], d["cores"]))
need(d["machine"].startswith("%s, %d cores, " % (d["cpu_model"], d["cores"])), "machine %r disagrees" % d["machine"])
need(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", d["date"]), "date %s" % d["date"])
u = d["uptime"]
need(sorted(u) == ["end", "start"] and all(len(u[k]) == 3 and all(x >= 0 for x in u[k]) for k in u), "uptime %s" % u)
def one(key, **want):
    s = d[key]
    need(s["ok"] is True and len(s["rounds"]) == 1 and s["rate_median"] > 0, "%s: %s" % (key, s))
    r = s["rounds"][0]
    for k, v in want.items():
        need(r[k] == v, "%s.%s = %s, want %s" % (key, k, r[k], v))
    return r
one("core_pubsub_128", size=128, messages=3000, received=3000, unique=3000, duplicates=0, bad=0)
one("core_pubsub_1k", size=1024, messages=2000, received=2000, unique=2000, duplicates=0, bad=0)
one("js_async_publish", messages=1000, stored=1000, refused=0)
for b in (64, 256):
    one("pull_fetch_ack_%d" % b, batch=b, messages=1000, fetched=1000, bad_sequences=0, all_acked=True,
        stream_msgs=1000)
one("relay_publish_before_ack", batch=64, messages=700, fetched=700, all_acked=True, stream_msgs=1400,
    arrived_unique=700, arrived_duplicates=0)
for key, window in (("e2e_path", 4096), ("e2e_path_32_in_flight", 32)):
    one(key, batch=256, messages=600, window=window, delivered_unique=600, duplicates=0, bad=0, all_acked=True,
        stream_msgs=1200)
p = d["e2e_path_at_20_per_s"]
need(p["ok"] is True and p["rate_target"] == 20 and p["delivered_unique"] == 10 and p["stream_msgs"] == 20,
     "e2e_path_at_20_per_s: %s" % p)
for key, asap in (("request_reply_send_asap", True), ("request_reply_default", False)):
    r = d[key]
    need(r["requests"] == 50 and r["wrong_replies"] == 0 and r["send_asap"] is asap, "%s: %s" % (key, r))
    l = r["latency_ms"]
    need(0 < l["p50"] <= l["p90"] <= l["p99"] <= l["max"], "%s percentiles %s" % (key, l))
f = one("flood", publishers=3, per_publisher=400, messages=1200, received=1200, unique=1200, duplicates=0)
need(f["latency_ms"]["p50"] <= f["latency_ms"]["p99"] and d["flood"]["drain_seconds_median"] > 0, "flood: %s" % f)
print("ok: bus.json complete; core %.0f/s, relay %.0f/s, request p50 %.3f ms (not judged)" % (
    d["core_pubsub_128"]["rate_median"], d["relay_publish_before_ack"]["rate_median"],
    d["request_reply_send_asap"]["latency_ms"]["p50"]))
PY

# A server that is not there: the tool says so and fails.
FREE=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if "$BUILD/bench/gust-bench-bus" "nats://127.0.0.1:$FREE" core 128 10 2>"$TMP/err"; then
    echo "FAIL: gust-bench-bus succeeded without a server"; exit 1
fi
grep -q "gust-bench-bus: core" "$TMP/err" || { echo "FAIL: no clear message: $(cat "$TMP/err")"; exit 1; }
echo "ok: $(head -1 "$TMP/err")"
# staterelay (flow-hop.sh's bus floor): every message relayed once, and the compare-and-set
# writes of 50 keys accepted (the tool fails on a refused write or a count that is off).
NPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
nats-server -a 127.0.0.1 -p "$NPORT" -js -sd "$TMP/nats" >"$TMP/nats.log" 2>&1 &
NPID=$!
trap 'kill "$NPID" 2>/dev/null; wait "$NPID" 2>/dev/null || true; rm -rf "$TMP"' EXIT
for _ in $(seq 1 500); do (exec 3<>"/dev/tcp/127.0.0.1/$NPORT") 2>/dev/null && break; sleep 0.01; done
"$BUILD/bench/gust-bench-bus" "nats://127.0.0.1:$NPORT" staterelay 64 700 SR 50 >"$TMP/sr.json"
python3 - "$TMP/sr.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
if not (r["ok"] is True and r["arrived_unique"] == 700 and r["arrived_duplicates"] == 0 and r["keys"] == 50
        and 50 <= r["state_writes"] <= 700 and r["stream_msgs"] == 1400):
    sys.exit("FAIL: staterelay: %s" % r)
print("ok: staterelay %d writes, %.0f/s (not judged)" % (r["state_writes"], r["rate"]))
PY
echo "bus smoke test passed"
