#!/usr/bin/env bash
# Tests gust-bench-loadgen against a Python HTTP server that misbehaves on purpose, decided
# by the id of each request:
#   id % 50 == 0   closes the connection without answering (an error, never resent)
#   id % 30 == 0   answers 202 with "Connection: close" and closes (a reconnect, no error)
#   id % 40 == 0   sends "100 Continue" before the answer
#   id % 25 == 0   answers 503 (non_202)
#   every answer   is written in three pieces a little apart (split across reads)
# and checks the counts, the ids (unique, contiguous), the countries and "t"; then a paced
# run, a run against gust-bench-sink, and the error exit when nothing listens.
#
#   bench/tools/test_loadgen.sh [BUILD_DIR]    (BUILD_DIR/bench/gust-bench-loadgen; default build)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
LG=$BUILD/bench/gust-bench-loadgen
SINK=$BUILD/bench/gust-bench-sink
[ -x "$LG" ] || { echo "no $LG (build the gust-bench-loadgen target)"; exit 2; }

TMP=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT

cat > "$TMP/server.py" <<'EOF'
import json, re, socket, sys, threading, time

log = open(sys.argv[1], "w")
lock = threading.Lock()
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(512)
print(srv.getsockname()[1], flush=True)
T_RE = re.compile(rb'"t": (\d{13}\.\d{3}),')

def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                c.close(); return
            buf += d
        head, buf = buf.split(b"\r\n\r\n", 1)
        clen = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                clen = int(v)
        while len(buf) < clen:
            d = c.recv(65536)
            if not d:
                c.close(); return
            buf += d
        body, buf = buf[:clen], buf[clen:]
        if buf:
            log.write("PIPELINED\n")
        ev = json.loads(body)
        n = int(ev["id"].split("#")[1])
        t = T_RE.search(body)
        with lock:
            log.write("%d %s %s %.3f %s\n" % (n, ev["shipping_address"]["country"],
                      t.group(1).decode() if t else "NO_T", time.time() * 1000,
                      "ok" if ev["line_items"][2]["unit_price_cents"] == 450 else "BAD"))
            log.flush()
        if n % 50 == 0:
            c.close(); return
        pieces = []
        if n % 40 == 0:
            pieces.append(b"HTTP/1.1 100 Continue\r\n\r\n")
        status = b"503 Service Unavailable" if n % 25 == 0 else b"202 Accepted"
        rb = b'{"subject":"ev.orders","seq":%d}\n' % n
        close = n % 30 == 0
        resp = (b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: "
                + str(len(rb)).encode() + b"\r\n" + (b"Connection: close\r\n" if close else b"")
                + b"\r\n" + rb)
        cut1, cut2 = 7, len(resp) - 5
        pieces += [resp[:cut1], resp[cut1:cut2], resp[cut2:]]
        for i, p in enumerate(pieces):
            if i:
                time.sleep(0.0005)
            c.sendall(p)
        if close:
            c.close(); return

while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF

fail() { echo "FAIL: $*"; exit 1; }
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

start_server() {
    : > "$TMP/port"
    python3 "$TMP/server.py" "$1" > "$TMP/port" &
    PIDS+=($!)
    for _ in $(seq 50); do [ -s "$TMP/port" ] && break; sleep 0.1; done
    PORT=$(head -1 "$TMP/port")
}

# 1. Counts and ids against the misbehaving server.
start_server "$TMP/log1"
FIRST=1001 COUNT=3000
OUT=$("$LG" --url "http://127.0.0.1:$PORT/ingest/orders" --connections 8 --count $COUNT \
      --first-id $FIRST --duration 60)
echo "misbehaving server: $OUT"
python3 - "$OUT" "$TMP/log1" $FIRST $COUNT <<'EOF' || fail "counts or ids"
import json, sys
r = json.loads(sys.argv[1]); first, count = int(sys.argv[3]), int(sys.argv[4])
ids = range(first, first + count)
dropped = sum(1 for n in ids if n % 50 == 0)
refused = sum(1 for n in ids if n % 50 and n % 25 == 0)
closes = sum(1 for n in ids if n % 50 and n % 30 == 0)
want = {"sent": count, "accepted": count - dropped - refused, "non_202": refused,
        "errors": dropped, "first_id": first, "last_id": first + count - 1,
        "unanswered": 0}
bad = {k: (r[k], v) for k, v in want.items() if r[k] != v}
assert not bad, "got/want %s" % bad
# no reconnect once sending has stopped (the last connections to close stay closed)
assert dropped + closes - 8 <= r["reconnects"] <= dropped + closes, r["reconnects"]
lines = open(sys.argv[2]).read().split("\n")
assert "PIPELINED" not in lines, "a request was pipelined"
rows = [l.split() for l in lines if l]
seen = [int(x[0]) for x in rows]
assert sorted(seen) == list(ids), "ids at the server: %d rows, %d unique" % (len(seen), len(set(seen)))
countries = ["France", "Germany", "Italy", "Spain"]
for n, country, t, recv_ms, ok in rows:
    n = int(n)
    assert country == countries[(n - 1) % 4], (n, country)
    assert t != "NO_T" and ok == "ok", (n, t, ok)
    assert 0 <= float(recv_ms) - float(t) < 1000, (n, t, recv_ms)
assert r["latency_ms"]["p50"] > 0 and r["latency_ms"]["max"] >= r["latency_ms"]["p99"]
print("ok: counts, unique contiguous ids, countries, t with 3 decimals")
EOF

# 2. Pacing: 300/s for 2 s over 4 connections.
start_server "$TMP/log2"
OUT=$("$LG" --url "http://127.0.0.1:$PORT/ingest/orders" --connections 4 --duration 2 --rate 300 \
      --first-id 1)
echo "paced 300/s: $OUT"
python3 - "$OUT" <<'EOF' || fail "pacing"
import json, sys
r = json.loads(sys.argv[1])
assert 590 <= r["sent"] <= 602, r["sent"]
assert r["errors"] == sum(1 for n in range(1, r["sent"] + 1) if n % 50 == 0)
print("ok: paced sent %d" % r["sent"])
EOF

# 3. Against the counting sink (answers 200), the sink counting ids.
if [ -x "$SINK" ]; then
    "$SINK" --id-field id > "$TMP/sink.out" &
    SPID=$!
    PIDS+=($SPID)
    for _ in $(seq 50); do grep -q '^port' "$TMP/sink.out" && break; sleep 0.1; done
    SPORT=$(awk '/^port/{print $2; exit}' "$TMP/sink.out")
    OUT=$("$LG" --url "http://127.0.0.1:$SPORT/ingest/orders" --connections 16 --duration 2 \
          --expect-status 200 --first-id 5)
    echo "sink: $OUT"
    kill -INT $SPID
    wait $SPID || true
    STATS=$(tail -1 "$TMP/sink.out")
    echo "sink stats: $STATS"
    python3 - "$OUT" "$STATS" <<'EOF' || fail "sink counts"
import json, sys
r, s = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert r["errors"] == 0 and r["non_202"] == 0 and r["accepted"] == r["sent"], r
assert s["received"] == r["sent"] and s["unique"] == r["sent"] and s["duplicates"] == 0, (r, s)
print("ok: sink saw %d unique ids, %.0f req/s" % (s["unique"], r["rate"]))
EOF
fi

# 4. Nothing listening: an error exit with a message.
FREE=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if "$LG" --url "http://127.0.0.1:$FREE/ingest/orders" --connections 2 --duration 1 2> "$TMP/err"; then
    fail "connecting to a closed port succeeded"
fi
grep -q "cannot connect" "$TMP/err" || fail "no clear message: $(cat "$TMP/err")"
echo "ok: $(cat "$TMP/err")"
echo "all loadgen tests passed"
