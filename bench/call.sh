#!/usr/bin/env bash
# call.sh [SECS] [CONNS]: request/reply through one flow. gust-bench-loadgen POSTs the
# orders event over CONNS keep-alive connections for SECS, first to /ingest/orders (202
# once stored: the baseline, in the same run), then to /call/call (200 with the flow's
# reply), one request in flight per connection; both subjects are consumed by the same
# flow script (bench/call.lua), which replies only to the calls. Round trips per second
# and latency percentiles of each.
# Correctness first: three calls with distinct ids must each be answered 200 with their
# own id, country and line count; then every call of the run must be answered 200 (no
# 504, no error) and the stream must hold exactly one event per call and per 202.
# Writes bench/results/call.json when the checks pass (emit_result in lib.sh).
source "$(dirname "$0")/lib.sh"
SECS=${1:-10}
CONNS=${2:-32}

start_nats
port=$(free_port)
cat >"$WORK/host.conf" <<CONF
log_level warn;
http { listen 127.0.0.1:$port; call_timeout 5s; }
nats { url $NATS_URL; }
flow call   { script $BENCH_DIR/call.lua; source ev.call; }
flow orders { script $BENCH_DIR/call.lua; source ev.orders; }
CONF
start_gust "$WORK/host.conf" "$port"
count() { "$BUILD/tests/gust-stream-read" "$NATS_URL" GUST | python3 -c '
import sys
data, n, i = sys.stdin.buffer.read(), 0, 0
while i < len(data):
    nl = data.index(b"\n", i)
    _, subject, size = data[i:nl].split(b" ")
    n += subject.decode() == sys.argv[1]
    i = nl + 1 + int(size) + 1
print(n)' "$1"; }

check_ok=true
for i in 1 2 3; do
    body="{\"id\":\"SO#check-$i\",\"country\":\"C$i\",\"line_items\":[$(seq -s, 1 "$i")]}"
    got=$(curl -s -o - -w ' %{http_code}' -d "$body" "http://127.0.0.1:$port/call/call")
    want="{\"id\":\"SO#check-$i\",\"country\":\"C$i\",\"lines\":$i}"
    python3 -c 'import json,sys; b, code = sys.argv[1].rsplit(" ", 1)
sys.exit(0 if code == "200" and json.loads(b) == json.loads(sys.argv[2]) else 1)' "$got" "$want" ||
        { echo "call $i answered: $got (want 200 $want)" >&2; check_ok=false; }
done

ingest=$("$TOOLS/gust-bench-loadgen" --url "http://127.0.0.1:$port/ingest/orders" --connections "$CONNS" \
         --duration "$SECS" --expect-status 202)
calls=$("$TOOLS/gust-bench-loadgen" --url "http://127.0.0.1:$port/call/call" --connections "$CONNS" \
        --duration "$SECS" --expect-status 200 --first-id 100000000)
stop_pid "$GUST_PID"
ingest_stored=$(count ev.orders)
call_stored=$(count ev.call)
ingest_ok=$(json_field '["accepted"]' "$ingest")
call_ok=$(json_field '["accepted"]' "$calls")
call_sent=$(json_field '["sent"]' "$calls")
ok=$([ "$check_ok" = true ] && [ "$call_ok" = "$call_sent" ] && [ "$call_ok" -gt 0 ] &&
     [ "$(json_field '["errors"]' "$calls")" = 0 ] && [ "$ingest_stored" = "$ingest_ok" ] &&
     [ "$call_stored" = $((call_ok + 3)) ] && echo true || echo false)
ratio=$(python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(round(a / b, 3) if b else 0)" \
        "$(json_field '["rate"]' "$calls")" "$(json_field '["rate"]' "$ingest")")
emit_result call "$([ "$ok" = true ] && echo ok || echo failed)" <<JSON
{"scenario":"call","seconds":$SECS,"connections":$CONNS,
 "call":$calls,"call_stored":$call_stored,
 "baseline_ingest":$ingest,"ingest_stored":$ingest_stored,
 "call_over_ingest_rate":$ratio,
 "checks":$ok}
JSON
[ "$ok" = true ]
