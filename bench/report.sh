#!/usr/bin/env bash
# report.sh: reads the JSON the benchmarks left in bench/results/, draws PNG plots with
# gnuplot into bench/plots/, and writes a markdown table of the latest figures (scenario,
# figure, baseline, ratio, command, machine) between the markers
#   <!-- report:begin --> ... <!-- report:end -->
# in bench/README.md. A missing results file is noted in the table, not an error; so is
# a file whose format this script does not know (it then reads its numbers generically).
# Runs nothing but gnuplot: it reports what the benchmark scripts measured.
#
# REPORT_RESULTS=dir, REPORT_PLOTS=dir, REPORT_README=file override the three places.
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RESULTS=${REPORT_RESULTS:-$BENCH_DIR/results}
PLOTS=${REPORT_PLOTS:-$BENCH_DIR/plots}
README=${REPORT_README:-$BENCH_DIR/README.md}
command -v gnuplot >/dev/null || { echo "report.sh: gnuplot is not installed (./build.sh deps)" >&2; exit 1; }
mkdir -p "$PLOTS"
WORK=$(mktemp -d /tmp/gust-report.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

python3 - "$RESULTS" "$PLOTS" "$README" "$WORK" <<'PY'
import glob, json, os, re, subprocess, sys

results, plots, readme, work = sys.argv[1:5]

# Every results file a benchmark writes, and the script that writes it.
KNOWN = [
    ("ingest", "ingest.sh"), ("run", "run.sh"), ("paced-20", "paced.sh"), ("paced-3000", "paced.sh"),
    ("flow-hop", "flow-hop.sh"), ("multi-flow", "multi-flow.sh"), ("vpl-engine", "vpl-engine.sh"),
    ("detect", "detect.sh"), ("broker-mqtt", "broker-mqtt.sh"), ("bus", "bus.sh"),
    ("mqtt-ladder", None), ("compare", "compare/run.sh"),
]

def load(name):
    path = os.path.join(results, name + ".json")
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError as e:
        notes.append("`results/%s.json` is not valid JSON (%s): skipped." % (name, e))
        return None

def get(d, *path):
    for k in path:
        if isinstance(d, dict) and k in d:
            d = d[k]
        elif isinstance(d, list) and isinstance(k, int) and -len(d) <= k < len(d):
            d = d[k]
        else:
            return None
    return d

def rate(x):
    if x is None:
        return "—"
    x = float(x)
    if x >= 1e6:
        return "%.2fM/s" % (x / 1e6)
    if x >= 1e3:
        return "%.1fk/s" % (x / 1e3)
    return "%.0f/s" % x

def ms(x):
    return "—" if x is None else ("%.2f ms" % x if x < 10 else "%.0f ms" % x)

notes = []
rows = []      # scenario, figure, baseline, ratio, command, machine
bars = []      # label, gust value, baseline value (or None): throughput against baseline
lat = []       # label, p50, p90, p99 (ms)
data = {}
for name, script in KNOWN:
    d = load(name)
    if d is None:
        if not any("`results/%s.json`" % name in n for n in notes):
            notes.append("`results/%s.json` is missing (%s has not written it)."
                         % (name, "bench/" + script if script else "its benchmark"))
        continue
    data[name] = d

def machine(d):
    m = d.get("machine")
    if not m:
        return "not recorded¹"
    load = [d.get(k) for k in ("load_average_1m_start", "load_average_1m_end", "load_average_1m") if d.get(k) is not None]
    return m + ("; load %s" % "→".join("%g" % x for x in load) if load else "")

def row(scenario, figure, baseline="—", ratio=None, command="", d=None):
    rows.append((scenario, figure, baseline, "—" if ratio is None else "%.2f" % ratio,
                 "`%s`" % command if command else "—", machine(d or {})))

def ratio(a, b):
    return None if a is None or b in (None, 0) else float(a) / float(b)

d = data.get("ingest")
if d:
    g, b = get(d, "loadgen", "rate"), get(d, "baseline_nats_async_publish", "rate")
    cmd = d.get("command") or "bench/ingest.sh %s %s" % (d.get("seconds", ""), d.get("connections", ""))
    row("ingest (HTTP → JetStream)", "%s, p50 %s, p99 %s" % (rate(g), ms(get(d, "loadgen", "latency_ms", "p50")),
        ms(get(d, "loadgen", "latency_ms", "p99"))), "nats.c async publish %s" % rate(b), ratio(g, b), cmd, d)
    bars.append(("ingest", g, b))
    lat.append(("ingest 202", get(d, "loadgen", "latency_ms", "p50"), get(d, "loadgen", "latency_ms", "p90"),
                get(d, "loadgen", "latency_ms", "p99")))
    row("cold start / RSS idle", "%s ms / %.1f MB" % (d.get("cold_start_ms"), (d.get("idle_rss_kb") or 0) / 1000),
        command=cmd, d=d)

def sink_latency(d):
    return [None if get(d, "sink", "latency_us", p) is None else get(d, "sink", "latency_us", p) / 1000
            for p in ("p50", "p90", "p99")]

# run.sh and paced.sh measure the bus alone doing the path's JetStream work in the same run
# ("bus_path"; runs before it was measured have none).
d = data.get("run")
if d:
    g, b = get(d, "sink", "rate"), get(d, "bus_path", "rate")
    p50, p90, p99 = sink_latency(d)
    cmd = d.get("command") or "bench/run.sh %s %s" % (d.get("seconds", ""), d.get("connections", ""))
    row("end to end, saturated", "%s delivered, p50 %s, p99 %s" % (rate(g), ms(p50), ms(p99)),
        "bus alone, same path %s" % rate(b) if b else "—", ratio(g, b), cmd, d)
    bars.append(("e2e saturated", g, b))
    lat.append(("e2e saturated", p50, p90, p99))
for name in ("paced-20", "paced-3000"):
    d = data.get(name)
    if d:
        p50, p90, p99 = sink_latency(d)
        b50, b99 = get(d, "bus_path", "latency_ms", "p50"), get(d, "bus_path", "latency_ms", "p99")
        cmd = d.get("command") or "bench/paced.sh %s %s" % (d.get("rate_target", ""), d.get("seconds", ""))
        row("end to end at %s/s" % d.get("rate_target"), "p50 %s, p99 %s" % (ms(p50), ms(p99)),
            "bus alone, same path: p50 %s, p99 %s" % (ms(b50), ms(b99)) if b50 is not None else "—",
            ratio(p50, b50), cmd, d)
        lat.append(("e2e %s/s" % d.get("rate_target"), p50, p90, p99))
        if b50 is not None:
            lat.append(("bus path %s/s" % d.get("rate_target"), b50, get(d, "bus_path", "latency_ms", "p90"), b99))

d = data.get("flow-hop")
if d:
    g, b = d.get("flow_rate_median"), d.get("relay_rate_median")
    cmd = d.get("command") or "bench/flow-hop.sh %s %s" % (d.get("events", ""), d.get("rounds", ""))
    row("flow hop (JetStream → Lua → JetStream)", rate(g), "bare relay %s" % rate(b), ratio(g, b), cmd, d)
    bars.append(("flow hop", g, b))

d = data.get("multi-flow")
if d:
    runs = d.get("runs") or []
    cmd = d.get("command") or "bench/multi-flow.sh %s" % d.get("per_flow", "")
    row("1 / 10 / 50 flows", " / ".join(rate(get(r, "count", "rate")) for r in runs) + "; RSS " +
        " / ".join("%.1f" % (r.get("rss_kb", 0) / 1000) for r in runs) + " MB", command=cmd, d=d)
    if runs:
        bars.append(("%d flows" % runs[-1].get("flows", 0), get(runs[-1], "count", "rate"), None))

d = data.get("detect")
if d:
    # The baseline is the bare relay over the same stored events (runs before it was
    # measured have only the engine alone).
    g, relay, eng = d.get("detect_rate_median"), d.get("relay_rate_median"), d.get("engine_rate_median")
    b = relay or eng
    base = ("bare relay %s; engine alone %s" % (rate(relay), rate(eng))) if relay else "engine alone %s" % rate(eng)
    cmd = d.get("command") or "bench/detect.sh %s" % d.get("pairs", "")
    row("detect unit (JetStream → VPL → JetStream)", rate(g), base, ratio(g, b), cmd, d)
    bars.append(("detect", g, b))

d = data.get("broker-mqtt")
if d:
    # The bare relay crosses the broker twice as gust does (runs before it was measured
    # have only mosquitto's pub -> sub).
    g, pubsub, relay = (d.get("round_trips_per_s_median"), d.get("mosquitto_pub_sub_per_s_median"),
                        d.get("bare_relay_round_trips_per_s_median"))
    b = relay or pubsub
    base = "mosquitto pub → sub %s" % rate(pubsub) + ("; bare MQTT relay %s" % rate(relay) if relay else "")
    cmd = d.get("command") or "bench/broker-mqtt.sh %s %s" % (d.get("messages", ""), d.get("rounds", ""))
    row("MQTT round trip, QoS 1", rate(g), base, ratio(g, b), cmd, d)
    bars.append(("MQTT loop", g, b))

d = data.get("vpl-engine")
if d:
    g = get(d, "orders", "rate_median")
    row("VPL engine alone, orders", rate(g), command=d.get("command") or "bench/vpl-engine.sh", d=d)
    seq = get(d, "sequence_distinct_hosts", "results") or []
    if seq:
        row("VPL engine alone, sequence, one host per open run",
            "%s with %d open run(s), %s with %d; %.0f B per open run" % (
                rate(seq[0]["rate_median"]), round(seq[0]["open_runs_mean"]), rate(seq[-1]["rate_median"]),
                round(seq[-1]["open_runs_mean"]), seq[-1]["bytes_per_open_run"]),
            command=d.get("command") or "bench/vpl-engine.sh", d=d)

d = data.get("bus")
if d:
    cmd = d.get("command") or "bench/bus.sh"
    for key, label in (("core_pubsub_128", "bus: core pub/sub 128 B"), ("core_pubsub_1k", "bus: core pub/sub 1 KiB"),
                       ("js_async_publish", "bus: JetStream async publish"),
                       ("pull_fetch_ack_64", "bus: pull fetch + ack, batch 64"),
                       ("pull_fetch_ack_256", "bus: pull fetch + ack, batch 256"),
                       ("relay_publish_before_ack", "bus: bare relay, publish before ack"),
                       ("e2e_path", "bus: the end-to-end path's JetStream work (store, hop, sink)"),
                       ("e2e_path_32_in_flight", "bus: the same path, 32 publishes in flight")):
        if get(d, key, "rate_median") is not None:
            row(label, rate(get(d, key, "rate_median")), command=cmd, d=d)
    for key, label in (("request_reply_send_asap", "bus: request/reply, send_asap"),
                       ("request_reply_default", "bus: request/reply, buffered")):
        r = d.get(key)
        if r:
            row(label, "p50 %s, p99 %s" % (ms(get(r, "latency_ms", "p50")), ms(get(r, "latency_ms", "p99"))),
                command=cmd, d=d)
            lat.append((label.replace("bus: request/reply", "bus req/rep"), get(r, "latency_ms", "p50"),
                        get(r, "latency_ms", "p90"), get(r, "latency_ms", "p99")))
    r = d.get("e2e_path_at_20_per_s")
    if r:
        row("bus: the same path at 20/s", "p50 %s, p99 %s" % (ms(get(r, "latency_ms", "p50")),
            ms(get(r, "latency_ms", "p99"))), command=cmd, d=d)
    f = d.get("flood")
    if f:
        r0 = get(f, "rounds", 0) or {}
        row("bus: flood, %s publishers × %s" % (r0.get("publishers"), r0.get("per_publisher")),
            "drain %.2f s (%s), latency p50 %s, p99 %s" % (f.get("drain_seconds_median", 0), rate(f.get("rate_median")),
            ms(f.get("latency_ms_p50_median")), ms(f.get("latency_ms_p99_median"))), command=cmd, d=d)
        lat.append(("bus flood", f.get("latency_ms_p50_median"), f.get("latency_ms_p90_median"),
                    f.get("latency_ms_p99_median")))

d = data.get("compare")
if d:
    cmd = "bench/compare/run.sh"
    g, n = get(d, "gust", "e2e", "delivered_per_s_median"), get(d, "node_red", "e2e", "delivered_per_s_median")
    row("gust vs Node-RED, end to end", "%s, p99 %s" % (rate(g), ms(get(d, "gust", "e2e", "latency_ms_median_of_rounds", "p99"))),
        "Node-RED %s, p99 %s" % (rate(n), ms(get(d, "node_red", "e2e", "latency_ms_median_of_rounds", "p99"))),
        ratio(g, n), cmd, d)
    bars.append(("vs Node-RED", g, n))
    g, n = get(d, "gust", "mqtt", "round_trips_per_s_median"), get(d, "node_red", "mqtt", "round_trips_per_s_median")
    row("gust vs Node-RED, MQTT QoS 1 round trips", rate(g), "Node-RED %s" % rate(n), ratio(g, n), cmd, d)

# Files nobody here knows the format of yet (mqtt-ladder, anything new): their
# numbers named like rates, ceilings or percentiles (up to three levels deep), so the
# table still shows them.
known_names = {n for n, _ in KNOWN} - {"mqtt-ladder"}
for path in sorted(glob.glob(os.path.join(results, "*.json"))):
    name = os.path.basename(path)[:-5]
    if name in known_names:
        continue
    d = data.get(name) or load(name)
    if not isinstance(d, dict):
        continue
    flat = []
    def walk(prefix, v, depth):
        if isinstance(v, dict) and depth < 3:
            for k, x in v.items():
                walk(prefix + "." + k if prefix else k, x, depth + 1)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            flat.append((prefix, v))
    walk("", d, 0)
    nums = [(k, v) for k, v in flat if re.search(r"rate|ceiling|per_s|p50|p99", k.split(".")[-1])]
    fig = ", ".join("%s %s" % (k, v) for k, v in nums[:4]) or "no top-level figures"
    row("%s (read generically)" % name, fig, command=d.get("command") or "", d=d)

# ---- the markdown ----
lines = ["| scenario | figure | baseline (same run) | ratio | command | machine |", "|---|---|---|---|---|---|"]
for r in rows:
    lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
lines.append("")
foot = []
if any(r[5] == "not recorded¹" for r in rows):
    foot.append("¹ The JSON does not record its machine: those runs are on the machine described at the top "
                "of this file.")
lines.append(" ".join(foot))
if notes:
    lines.append("")
lines.extend("- " + n for n in notes)

# ---- the plots ----
def write(name, text):
    with open(os.path.join(work, name), "w") as f:
        f.write(text)

def num(x):
    return "-" if x is None else "%g" % x

COMMON = """set terminal pngcairo size 900,520 font "sans,10"
set datafile missing "-"
set datafile separator "\\t"
set grid ytics
set key top right
set style fill solid 0.8 border -1
set termoption noenhanced
"""
made = []
def plot(name, script):
    out = os.path.join(plots, name + ".png")
    script = COMMON + 'set output "%s"\n' % out + script
    write(name + ".gp", script)
    p = subprocess.run(["gnuplot", os.path.join(work, name + ".gp")], capture_output=True, text=True)
    if p.returncode != 0 or not os.path.exists(out):
        sys.exit("report.sh: gnuplot failed on %s: %s" % (name, p.stderr))
    made.append((name, out))

if bars:
    write("throughput.dat", "".join("%s\t%s\t%s\n" % (l, num(g), num(b)) for l, g, b in bars))
    plot("throughput", """set title "Throughput per scenario against its baseline in the same run (events/s, log scale)"
set style data histogram
set style histogram cluster gap 1
set logscale y
set yrange [1000:*]
set ylabel "events/s"
set xtics nomirror
plot "%(w)s/throughput.dat" using 2:xtic(1) title "gust" lc rgb "#3b6ea5", \\
     "" using 3 title "baseline" lc rgb "#c8c8c8", \\
     "" using ($0-1/6.):2:(sprintf("%%.1fk", $2/1000)) with labels offset 0,0.6 notitle, \\
     "" using ($0+1/6.):3:(sprintf("%%.1fk", $3/1000)) with labels offset 0,0.6 notitle
""" % {"w": work})
else:
    notes.append("no throughput figures: throughput.png not drawn.")

if lat:
    write("latency.dat", "".join("%s\t%s\t%s\t%s\n" % (l, num(a), num(b), num(c)) for l, a, b, c in lat))
    plot("latency", """set title "Latency percentiles (ms, log scale)"
set style data histogram
set style histogram cluster gap 1
set logscale y
set ylabel "ms"
set xtics nomirror rotate by -20
set key top left
plot "%(w)s/latency.dat" using 2:xtic(1) title "p50" lc rgb "#3b6ea5", \\
     "" using 3 title "p90" lc rgb "#7fa7d1", "" using 4 title "p99" lc rgb "#d18b3b", \\
     "" using ($0-0.25):2:($2 >= 100 ? sprintf("%%.0f", $2) : sprintf("%%.2g", $2)) with labels offset 0,0.6 notitle, \\
     "" using ($0+0.25):4:($4 >= 100 ? sprintf("%%.0f", $4) : sprintf("%%.2g", $4)) with labels offset 0,0.6 notitle
""" % {"w": work})

d = data.get("vpl-engine")
if d:
    series = []
    for key, title in (("sequence", "WORKLOAD generator (500 hosts)"),
                       ("sequence_distinct_hosts", "one host per open run"),
                       ("sequence_unpartitioned", "no .partition_by, 500 hosts"),
                       ("sequence_unpartitioned_distinct_hosts", "no .partition_by, one host per run")):
        res = get(d, key, "results") or []
        if res:
            write(key + ".dat", "".join("%g\t%g\t%s\n" % (max(r["open_runs_mean"], 1), r["rate_median"], r["lag"]) for r in sorted(res, key=lambda r: r["open_runs_mean"])))
            s = '"%s/%s.dat" using 1:2 with linespoints lw 2 pt 7 title "%s"' % (work, key, title)
            if len(series) < 2:  # LAG labels on the two partitioned series only, one above, one below
                s += ', "" using 1:2:(sprintf("LAG %%s", strcol(3))) with labels offset 0,%s font ",8" notitle' % (
                    "1" if not series else "-1")
            series.append(s)
    if series:
        plot("vpl-lag", """set title "Correlation engine alone: rate against open runs (sequence program, median of reps)"
set logscale x
set xlabel "mean open runs (log)"
set ylabel "events/s"
set yrange [0:*]
set key bottom left
plot %s
""" % ", \\\n     ".join(series))

d = data.get("multi-flow")
if d and d.get("runs"):
    write("multi.dat", "".join("%d\t%g\t%g\n" % (r["flows"], r["rss_kb"] / 1000, get(r, "count", "rate") or 0) for r in d["runs"]))
    plot("multi-flow-rss", """set title "RSS and aggregate rate against flow count (multi-flow)"
set xlabel "flows"
set ylabel "RSS (MB)"
set y2label "events/s"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
set xrange [0:55]
set key bottom right
plot "%(w)s/multi.dat" using 1:2 with linespoints lw 2 pt 7 title "RSS (MB)", \\
     "" using 1:2:(sprintf("%%.1f MB", $2)) with labels offset 2,-1 notitle, \\
     "" using 1:3 axes x1y2 with linespoints lw 2 pt 5 dt 2 title "events/s (right axis)"
""" % {"w": work})

d = data.get("bus")
if d:
    items = [("core 128 B", "core_pubsub_128"), ("core 1 KiB", "core_pubsub_1k"), ("JS publish", "js_async_publish"),
             ("fetch+ack 64", "pull_fetch_ack_64"), ("fetch+ack 256", "pull_fetch_ack_256"),
             ("relay", "relay_publish_before_ack"), ("flood drain", "flood")]
    write("bus.dat", "".join("%s\t%s\n" % (l, num(get(d, k, "rate_median"))) for l, k in items))
    plot("bus", """set title "The bus alone: nats.c against nats-server (messages/s, median of rounds)"
set style data histogram
set style histogram cluster gap 1
set logscale y
set yrange [1000:*]
set ylabel "messages/s"
set key off
plot "%(w)s/bus.dat" using 2:xtic(1) notitle lc rgb "#3b6ea5", \\
     "" using ($0):2:(sprintf("%%.0fk", $2/1000)) with labels offset 0,0.6 notitle
""" % {"w": work})

# ---- README ----
rel = os.path.relpath(plots, os.path.dirname(os.path.abspath(readme)))
lines.append("")
for name, out in made:
    lines.append("![%s](%s/%s.png)" % (name, rel, name))
block = "<!-- report:begin -->\n<!-- written by bench/report.sh from results/*.json; edits here are overwritten -->\n" + \
        "\n".join(lines) + "\n<!-- report:end -->"
text = open(readme).read() if os.path.exists(readme) else ""
if "<!-- report:begin -->" in text and "<!-- report:end -->" in text:
    text = re.sub(r"<!-- report:begin -->.*?<!-- report:end -->", lambda m: block, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n## Report\n\n" + block + "\n"
with open(readme, "w") as f:
    f.write(text)
print("report: %d rows, %d plots in %s, README %s" % (len(rows), len(made), plots, readme))
for n in notes:
    print("note: " + n)
PY
