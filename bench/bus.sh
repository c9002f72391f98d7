#!/usr/bin/env bash
# bus.sh: the bus's own ceilings, nats.c against the nats-server gust uses, no gust:
# core pub/sub at 128 B and 1 KiB, JetStream async publish, pull fetch + ack in batches
# of 64 and 256, the bare publish-before-ack relay, the JetStream work of gust's whole
# end-to-end path at once (store, hop, sink: saturated and at 20/s), sequential request/reply latency
# (send_asap and nats.c's buffered default), and a flood (publishers dump a burst, one
# subscriber drains). Every test checks its counts (see bench/tools/busbench.c) before a
# rate is kept. Rounds interleave the throughput tests; medians are reported.
#
# Prints one JSON document and writes it to bench/results/bus.json (emit_result in lib.sh:
# RESULT=file writes it there instead). Sizes (defaults in brackets; the whole run takes about a minute here):
#   BUS_ROUNDS [3]  BUS_CORE_N [300000] (128 B)  BUS_CORE_KIB_N [150000] (1 KiB)
#   BUS_JS_N [50000]  BUS_FETCH_N [50000]  BUS_RELAY_N [50000]  BUS_RELAY_BATCH [256]
#   BUS_JS_SIZE [308: a WORKLOAD orders event]  BUS_PATH_N [50000]  BUS_PATH_PACED_N [200 at 20/s]
#   BUS_REQ_N [3000]
#   BUS_FLOOD_PUBS [4]  BUS_FLOOD_N [25000 per publisher]  BUS_FLOOD_SIZE [128]
source "$(dirname "$0")/lib.sh"
BUS=$TOOLS/gust-bench-bus
[ -x "$BUS" ] || { echo "missing $BUS: build first (./build.sh build)" >&2; exit 1; }
ROUNDS=${BUS_ROUNDS:-3}
CORE_N=${BUS_CORE_N:-300000}
CORE_KIB_N=${BUS_CORE_KIB_N:-150000}
JS_N=${BUS_JS_N:-50000}
FETCH_N=${BUS_FETCH_N:-50000}
RELAY_N=${BUS_RELAY_N:-50000}
RELAY_BATCH=${BUS_RELAY_BATCH:-256}
PATH_N=${BUS_PATH_N:-50000}
PATH_PACED_N=${BUS_PATH_PACED_N:-200}
JS_SIZE=${BUS_JS_SIZE:-308}
REQ_N=${BUS_REQ_N:-3000}
FLOOD_PUBS=${BUS_FLOOD_PUBS:-4}
FLOOD_N=${BUS_FLOOD_N:-25000}
FLOOD_SIZE=${BUS_FLOOD_SIZE:-128}

start_nats

bus() { # bus NAME TEST ARGS...: one test, its JSON appended to $WORK/NAME.jsonl
    local name=$1
    shift
    if ! "$BUS" "$NATS_URL" "$@" >>"$WORK/$name.jsonl"; then
        echo "bus.sh: $name ($*) failed its checks" >&2
        exit 1
    fi
}

START=$(date +%s.%N)
for r in $(seq 1 "$ROUNDS"); do
    bus core_128 core 128 "$CORE_N"
    bus core_1k core 1024 "$CORE_KIB_N"
    bus js_publish jspub "$JS_SIZE" "$JS_N" "BUSPUB$r"
    bus fetch_64 fetch 64 "$FETCH_N" "BUSF64R$r" "$JS_SIZE"
    bus fetch_256 fetch 256 "$FETCH_N" "BUSF256R$r" "$JS_SIZE"
    bus relay relay "$RELAY_BATCH" "$RELAY_N" "BUSRELAY$r" "$JS_SIZE"
    bus path path 256 "$PATH_N" "BUSPATH$r" "$JS_SIZE" 0 4096
    bus path_32 path 256 "$PATH_N" "BUSPATH32R$r" "$JS_SIZE" 0 32
    bus flood flood "$FLOOD_PUBS" "$FLOOD_N" "$FLOOD_SIZE"
done
bus path_paced path 256 "$PATH_PACED_N" BUSPATHPACED "$JS_SIZE" 20
bus reqrep_asap reqrep "$REQ_N" 128 1
bus reqrep_default reqrep "$REQ_N" 128 0
SECONDS_TOTAL=$(awk -v a="$START" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')

python3 - "$WORK" >"$WORK/bus.json" <<PY
import json, os, statistics, sys
work = sys.argv[1]
def rounds(name):
    with open(os.path.join(work, name + ".jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]
def summary(name, extra=()):
    rs = rounds(name)
    s = {"rate_median": statistics.median(r["rate"] for r in rs), "rates": [r["rate"] for r in rs]}
    for k in extra:
        s[k + "_median"] = statistics.median(r[k] for r in rs)
    s["ok"] = all(r["ok"] for r in rs)
    s["rounds"] = rs
    return s
flood = summary("flood", ("drain_seconds",))
for p in ("p50", "p90", "p99", "max"):
    flood["latency_ms_" + p + "_median"] = statistics.median(r["latency_ms"][p] for r in flood["rounds"])
doc = {
    "scenario": "bus",
    "what": "nats.c against nats-server, no gust: the bus's own ceilings",
    "rounds": $ROUNDS,
    "statistic": "median of rounds",
    "machine": "$(python3 "$BENCH_DIR/provenance.py" machine)",
    "nats_server": "$(nats-server --version 2>&1 | head -1)",
    "nats_c": "$(pkg-config --modversion libnats 2>/dev/null || echo unknown)",
    "seconds_total": $SECONDS_TOTAL,
    "core_pubsub_128": summary("core_128", ("mb_per_s",)),
    "core_pubsub_1k": summary("core_1k", ("mb_per_s",)),
    "js_async_publish": summary("js_publish"),
    "pull_fetch_ack_64": summary("fetch_64"),
    "pull_fetch_ack_256": summary("fetch_256"),
    "relay_publish_before_ack": summary("relay"),
    "e2e_path": summary("path"),
    "e2e_path_32_in_flight": summary("path_32"),
    "e2e_path_at_20_per_s": rounds("path_paced")[0],
    "request_reply_send_asap": rounds("reqrep_asap")[0],
    "request_reply_default": rounds("reqrep_default")[0],
    "flood": flood,
}
doc["ok"] = all(v.get("ok", True) for v in doc.values() if isinstance(v, dict))
print(json.dumps(doc))
PY
emit_result bus "$([ "$(json_field '["ok"]' "$(cat "$WORK/bus.json")")" = True ] && echo ok || echo failed)" <"$WORK/bus.json"
