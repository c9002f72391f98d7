"""bench/report.py RESULTS PLOTS README WORK (run by bench/report.sh): the table of the
latest figures and the plots, from the results files the benchmarks wrote.

One row per figure: scenario, command, gust, its baseline in the same run, the ratio,
the target (from TARGETS below, with whether the figure meets it), and where the figure
comes from: the commit measured and the load average at the start and end of its run
(bench/provenance.py writes those). A results file written before those fields existed
shows "not recorded"; nothing is guessed.

Each known results file has a reader (READERS). A file without one, or one its reader
cannot read (a format changed on another branch), is shown generically: its numbers named
like rates, ceilings or percentiles. A new benchmark gets its own row by adding a reader
function and a line in READERS, and its targets to TARGETS and bench/WORKLOAD.md."""
import glob
import json
import os
import re
import subprocess
import sys

# The targets, as bench/WORKLOAD.md states them (bench/tools/test_report.sh checks that
# each text is there): key -> (text, check). A check takes the row's figures and says
# whether the target is met; None: reported, no target.
TARGETS = {
    "ingest": ("≥ 25k req/s", lambda f: f["rate"] >= 25000),
    "cold-start": ("< 10 ms", lambda f: f["ms"] < 10),
    "rss-idle": ("< 5 MB idle", lambda f: f["idle_mb"] < 5),
    "e2e-saturated": ("≥ 20k events/s, peak RSS < 8 MB", lambda f: f["rate"] >= 20000 and f["rss_mb"] < 8),
    "e2e-20": ("p50 ≤ 1 ms, p99 ≤ 2 ms", lambda f: f["p50"] <= 1 and f["p99"] <= 2),
    "flow-hop": ("≥ 35k events/s and ≥ 0.8 of the relay", lambda f: f["rate"] >= 35000 and f["ratio"] >= 0.8),
    "multi-flow": ("50 flows < 25 MB settled", lambda f: f["rss_50_mb"] < 25),
    "detect": ("≥ 0.8 of the relay", lambda f: f["ratio"] >= 0.8),
    "detect-checkpoints": ("checkpoints on ≥ 0.9 of off", lambda f: f["ratio"] >= 0.9),
    "detect-restore": ("start, restore and replay of 20 000 events < 1 s at 100 000 open runs; checkpoint ≤ 250 B "
                       "per open run", lambda f: f["lag"] >= 100000 and f["ms"] < 1000 and f["bytes"] <= 250),
    "flow-state": ("≥ 0.7 of the flow hop", lambda f: f["ratio"] >= 0.7),
    "mqtt-loop": ("≥ 10k round trips/s", lambda f: f["rate"] >= 10000),
    "mqtt-ladder": ("≥ 0.7 of mosquitto", lambda f: min(f["ratios"]) >= 0.7),
    "cluster-work": ("0 lost", lambda f: f["lost"] == 0),
    "soak": ("0 lost, duplicates < 0.01% of accepted; RSS < 2× its start + 16 MB, fds < start + 16",
             lambda f: f["lost"] == 0 and f["dups"] < 1e-4 * f["accepted"] and f["rss1"] < 2 * f["rss0"] + 16
             and f["fds1"] < f["fds0"] + 16),
    "cluster-lease": ("one timer (8 ticks); handoff < 1.5 s; failover < lease_ttl + 1 s",
                      lambda f: f["ticks_ok"] and f["handoff"] < 1.5 and f["failover"] < f["ttl"] + 1),
    "detect-failover": ("gap < lease_ttl + 1 s after kill -9, < 1 s after a clean stop",
                        lambda f: f["kill"] < f["kill_target"] and f["term"] < f["term_target"]),
    "vpl-orders": ("≥ 1.5M events/s warm", lambda f: f["rate"] >= 1.5e6),
    "vpl-sequence": ("≥ 1.5M events/s warm at 10 000 open runs, ≤ 200 B per open run",
                     lambda f: f["rate_10k"] >= 1.5e6 and f["bytes"] <= 200),
    "compare-e2e": ("≥ 15× Node-RED, lower p99", lambda f: f["ratio"] >= 15 and f["p99_ratio"] < 1),
    "compare-mqtt": ("≥ 5× Node-RED", lambda f: f["ratio"] >= 5),
    "compare-rss": ("≤ 0.1 of Node-RED's peak RSS", lambda f: f["ratio"] <= 0.1),
    "topology": ("GET /topology p50 < 1 ms at 50 units", lambda f: f["units"] >= 50 and f["p50"] < 1),
    "otlp": ("ingest with otlp at sample 0.01 ≥ 0.9 of otlp off", lambda f: f["ratio"] >= 0.9),
    "sink-batch": ("batch_max 100 ≥ 5× batch_max 1", lambda f: f["ratio"] >= 5),
    "sink-rate": ("rate 10000000/s ≥ 0.95 of no rate", lambda f: f["ratio"] >= 0.95),
    "brokers": ("≥ 0.8 of the lower ceiling (the broker's own relay, the bus alone)", lambda f: f["ratio"] >= 0.8),
    "report": ("reported, no target", None),
    "ceiling": ("the ceiling: no target", None),
}

results, plots, readme, work = sys.argv[1:5]
notes = []
rows = []  # scenario, command, gust, baseline, ratio, target, commit, load
bars = []  # label, gust value, baseline value (or None): throughput against baseline
lat = []   # label, p50, p90, p99 (ms)


def get(d, *path):
    for k in path:
        if isinstance(d, dict) and k in d:
            d = d[k]
        elif isinstance(d, list) and isinstance(k, int) and -len(d) <= k < len(d):
            d = d[k]
        else:
            return None
    return d


def rate(x, unit="/s"):
    if x is None:
        return "—"
    x = float(x)
    if x >= 1e6:
        return "%.2fM%s" % (x / 1e6, unit)
    if x >= 1e3:
        return "%.1fk%s" % (x / 1e3, unit)
    return "%.0f%s" % (x, unit)


def ms(x):
    return "—" if x is None else ("%.2f ms" % x if x < 10 else "%.0f ms" % x)


def mb(kb):
    return None if kb is None else kb / 1000


def ratio(a, b):
    return None if a is None or b in (None, 0) else float(a) / float(b)


def target(key, **figures):
    text, check = TARGETS[key]
    if check is None:
        return text
    try:
        met = check(figures)
    except (TypeError, KeyError):  # a figure the run did not record
        return text
    return "%s: **%s**" % (text, "met" if met else "not met")


def commit_of(d):
    return d.get("commit") or "not recorded"


def load_of(d):
    """The 1-minute load average at the start and end of the run."""
    u = d.get("uptime")
    if isinstance(u, dict) and u.get("start") and u.get("end"):
        return "%g → %g" % (u["start"][0], u["end"][0])
    # The shapes of the files written before "uptime": what they recorded, as recorded.
    a, b = d.get("load_average_1m_start"), d.get("load_average_1m_end")
    if a is not None and b is not None:
        return "%g → %g" % (a, b)
    end = d.get("load_average_1m", d.get("load_average_1m_at_end"))
    return "%g at the end" % end if end is not None else "not recorded"


def row(d, scenario, gust, command, baseline="—", rt=None, tgt="—"):
    if isinstance(rt, (int, float)):
        rt = "%.2f" % rt
    rows.append((scenario, "`%s`" % command if command else "—", gust, baseline or "—", rt or "—", tgt,
                 commit_of(d), load_of(d)))


def cmd(d, default):
    return d.get("command") or default


# ---- the readers, one per results file ----

def read_ingest(d):
    g, b = get(d, "loadgen", "rate"), get(d, "baseline_nats_async_publish", "rate")
    c = cmd(d, "bench/ingest.sh %s %s" % (d.get("seconds", ""), d.get("connections", "")))
    p = lambda k: get(d, "loadgen", "latency_ms", k)
    checked = "; stored == accepted" if d.get("counts_check") else ""
    row(d, "ingest: HTTP POST → JetStream, 202 after the PubAck", "%s, p50 %s, p99 %s%s" % (
        rate(g, " req/s"), ms(p("p50")), ms(p("p99")), checked), c,
        "nats.c async publish alone %s" % rate(b), ratio(g, b), target("ingest", rate=g))
    bars.append(("ingest", g, b))
    lat.append(("ingest 202", p("p50"), p("p90"), p("p99")))
    row(d, "cold start: spawn → /healthz 200", ms(d.get("cold_start_ms")), c,
        tgt=target("cold-start", ms=d.get("cold_start_ms")))
    idle, load = mb(d.get("idle_rss_kb")), mb(d.get("rss_under_load_kb"))
    row(d, "RSS idle / under ingest load", "%.1f / %.1f MB" % (idle or 0, load or 0), c,
        tgt=target("rss-idle", idle_mb=idle))


def sink_latency(d):
    return [None if get(d, "sink", "latency_us", p) is None else get(d, "sink", "latency_us", p) / 1000
            for p in ("p50", "p90", "p99")]


def read_run(d):
    # The baseline: the bus alone doing the path's JetStream work on the same nats-server,
    # right after gust ("bus_path").
    g, b = get(d, "sink", "rate"), get(d, "bus_path", "rate")
    bi = get(d, "bus_path_ids", "rate")  # the same, each publish with a Nats-Msg-Id as gust's
    p50, p90, p99 = sink_latency(d)
    ok = "; delivered == accepted" if d.get("delivered_equals_accepted") else ""
    row(d, "end to end, saturated: loadgen → ingest → flow → http_out → sink",
        "%s delivered, p50 %s, p99 %s; peak RSS %.1f MB%s" % (rate(g), ms(p50), ms(p99), mb(d.get("rss_peak_kb")) or 0, ok),
        cmd(d, "bench/run.sh %s %s" % (d.get("seconds", ""), d.get("connections", ""))),
        ("the bus alone, same path: %s" % rate(b) +
         ("; with gust's message ids %s (%.2f of it)" % (rate(bi), ratio(g, bi)) if bi and g else "")) if b else None,
        ratio(g, b),
        target("e2e-saturated", rate=g, rss_mb=mb(d.get("rss_peak_kb"))))
    bars.append(("e2e saturated", g, b))
    lat.append(("e2e saturated", p50, p90, p99))


def read_paced(d):
    p50, p90, p99 = sink_latency(d)
    b = lambda k: get(d, "bus_path", "latency_ms", k)
    r = d.get("rate_target")
    row(d, "end to end at %s events/s" % r, "p50 %s, p90 %s, p99 %s" % (ms(p50), ms(p90), ms(p99)),
        cmd(d, "bench/paced.sh %s %s" % (r, d.get("seconds", ""))),
        "the bus alone, same path: p50 %s, p99 %s" % (ms(b("p50")), ms(b("p99"))) if b("p50") is not None else None,
        ratio(p50, b("p50")), target("e2e-20", p50=p50, p99=p99) if r == 20 else target("report"))
    lat.append(("e2e %s/s" % r, p50, p90, p99))
    if b("p50") is not None:
        lat.append(("bus path %s/s" % r, b("p50"), b("p90"), b("p99")))


def read_flow_hop(d):
    g, b = d.get("flow_rate_median"), d.get("relay_rate_median")
    row(d, "flow hop: JetStream → bench_orders.lua → JetStream",
        "%s, RSS %.1f MB" % (rate(g), mb(d.get("flow_rss_kb")) or 0),
        cmd(d, "bench/flow-hop.sh %s %s" % (d.get("events", ""), d.get("rounds", ""))),
        "bare relay (same core, no script) %s" % rate(b), ratio(g, b),
        target("flow-hop", rate=g, ratio=ratio(g, b)))
    bars.append(("flow hop", g, b))
    st = d.get("state_rate_median")
    if st is not None:  # runs before the state variant have none
        row(d, "flow hop with durable state: one state.incr per event, 1 000 keys on NATS KV", rate(st),
            cmd(d, "bench/flow-hop.sh"), "the flow hop without state %s" % rate(g), ratio(st, g),
            target("flow-state", ratio=ratio(st, g)))
    sb, gb = d.get("state_batched_rate_median"), d.get("flow_batched_rate_median")
    if sb is not None and gb is not None:
        row(d, "the same at batch %s (about %.0f events per key per batch)" % (d.get("state_batch"),
                                                                           (d.get("state_batch") or 0) / 1000),
            "%s, RSS %.1f MB" % (rate(sb), mb(d.get("state_batched_rss_kb")) or 0), cmd(d, "bench/flow-hop.sh"),
            "the flow hop without state at batch %s %s" % (d.get("state_batch"), rate(gb)), ratio(sb, gb),
            target("flow-state", ratio=ratio(sb, gb)))


def read_multi_flow(d):
    runs = d.get("runs") or []
    flows = " / ".join(str(r.get("flows")) for r in runs)
    fig = " / ".join(rate(get(r, "count", "rate")) for r in runs)
    fig += "; RSS at the end %s MB" % " / ".join("%.1f" % mb(r["rss_kb"]) for r in runs)
    if all("rss_settled_kb" in r for r in runs):
        fig += ", settled %s MB" % " / ".join("%.1f" % mb(r["rss_settled_kb"]) for r in runs)
    last = next((r for r in runs if r.get("flows") == 50), None)
    row(d, "%s flows, each its own subjects" % flows, fig, cmd(d, "bench/multi-flow.sh %s" % d.get("per_flow", "")),
        tgt=target("multi-flow", rss_50_mb=mb(get(last, "rss_settled_kb"))))
    if runs:
        bars.append(("%d flows" % runs[-1].get("flows", 0), get(runs[-1], "count", "rate"), None))


def checkpoints_written(rounds):
    """What the checkpointed rounds wrote: how many checkpoints a round, how many failed,
    and the last round's last checkpoint (the one at the stop)."""
    if not isinstance(rounds, list) or not rounds or not all(isinstance(r, dict) for r in rounds):
        return "checkpoints written: %s" % rounds
    counts = sorted(r.get("count", 0) for r in rounds)
    last = rounds[-1]
    return "%s checkpoints a round, %d failed; the last %s B, written in %s ms" % (
        counts[0] if counts[0] == counts[-1] else "%d-%d" % (counts[0], counts[-1]),
        sum(r.get("failures", 0) for r in rounds), last.get("bytes"), last.get("write_ms"))


def read_detect(d):
    # The baseline: the bare relay over the same stored events (it publishes every event;
    # the unit publishes one alert per pair); the engine alone is shown beside it.
    g, relay, eng = d.get("detect_rate_median"), d.get("relay_rate_median"), d.get("engine_rate_median")
    checked = ", alerts == pairs" if d.get("alerts_equal_pairs") else ""
    lag = " at LAG %s" % d["lag"] if d.get("lag") not in (None, 1000) else ""
    # LAG is an environment variable: the command as started does not show it.
    command = ("LAG=%s " % d["lag"] if lag else "") + cmd(d, "bench/detect.sh %s" % d.get("pairs", ""))
    row(d, "detect unit: JetStream → bench_sequence.vpl → JetStream%s" % lag,
        "%s%s, RSS %.1f MB" % (rate(g), checked, mb(d.get("rss_kb_end_median")) or 0),
        command,
        "bare relay %s; the engine alone %s" % (rate(relay), rate(eng)), ratio(g, relay),
        target("detect", ratio=ratio(g, relay)))
    if not lag:
        bars.append(("detect", g, relay))
    off = d.get("checkpoints_off_rate_median")
    if off is not None:  # runs before checkpoints have none
        row(d, "detect unit's checkpoints%s: every 5 s and 100 000 events, against only at the stop" % lag,
            "%s, %s" % (rate(g), checkpoints_written(d.get("checkpoints_each_round"))), command,
            "checkpoints off %s" % rate(off), ratio(g, off), target("detect-checkpoints", ratio=ratio(g, off)))


def read_replay(d):
    g, b = d.get("replay_rate_median"), d.get("empty_replay_rate_median")
    row(d, "shadow replay of the orders flow against itself, %s stored events" % d.get("events"), rate(g),
        cmd(d, "bench/replay.sh"), "the replay of a script that emits nothing %s" % rate(b), ratio(g, b),
        target("report"))


def read_broker_mqtt(d):
    # The baseline: the bare MQTT relay, which crosses the broker twice as gust's path does.
    g, pubsub, relay = (d.get("round_trips_per_s_median"), d.get("mosquitto_pub_sub_per_s_median"),
                        d.get("bare_relay_round_trips_per_s_median"))
    row(d, "MQTT round trip, QoS 1 both ways, through JetStream",
        "%s, %s duplicates, %s out of order" % (rate(g), d.get("gust_duplicates"), d.get("gust_out_of_order")),
        cmd(d, "bench/broker-mqtt.sh %s %s" % (d.get("messages", ""), d.get("rounds", ""))),
        "bare MQTT relay %s; mosquitto pub → sub %s" % (rate(relay), rate(pubsub)), ratio(g, relay),
        target("mqtt-loop", rate=g))
    bars.append(("MQTT loop", g, relay))


def read_mqtt_ladder(d):
    b, tel, win = (d["mosquitto_pub_sub_ceiling_per_s"], d["telemetry_ceiling_per_s"], d["windows_ceiling_per_s"])
    rt, rw = ratio(tel, b), ratio(win, b)
    row(d, "MQTT QoS 0 ladder, edge path: telemetry filter (Lua) / 10 s windows (VPL)",
        "%s / %s with zero loss, kept up" % (rate(tel), rate(win)), cmd(d, "bench/mqtt-ladder.sh"),
        "mosquitto pub → sub %s" % rate(b), "%.2f / %.2f" % (rt, rw) if rt is not None else None,
        target("mqtt-ladder", ratios=[rt, rw]))


def read_mqtt_cpu(d):
    # The baseline is another build (BASE_BUILD), run in turns with this one.
    g, b = d["gust_cpu_us_per_reading_median"], d["base_gust_cpu_us_per_reading_median"]
    base = get(d, "base", "commit") or d.get("base_build")
    row(d, "MQTT CPU per reading, edge telemetry path at %s readings/s" % d.get("rate"),
        "%.1f µs, %.2f context switches" % (g, d["gust_switches_per_reading_median"]),
        cmd(d, "bench/mqtt-cpu.sh BASE_BUILD"), "build %s: %.1f µs, %.2f switches" % (
            base, b, d["base_gust_switches_per_reading_median"]), ratio(g, b), target("report"))


def read_cluster(d):
    c = cmd(d, "bench/cluster.sh")
    work = d["shared_work"]
    row(d, "cluster: %s gust processes share a durable consumer, one killed with -9" %
        " and ".join(str(w["instances"]) for w in work),
        "; ".join("%d processes: %d of %d delivered, %d lost, %d duplicates, drained in %.1f s" % (
            w["instances"], w["delivered_unique"], w["events"], w["lost"], w["duplicates"], w["drain_s"])
            for w in work), c, tgt=target("cluster-work", lost=sum(w["lost"] for w in work)))
    t, lease = d["timer"], d["lease"]
    fo = lease.get("failover_gap_s")
    row(d, "cluster: a singleton timer on %d processes; lease handoff (SIGTERM) and failover (kill -9)" %
        t["instances"], "%d ticks of %d; handoff gap %.2f s; failover gap %s (lease_ttl %s s)" % (
            t["ticks"], t["expected"], lease["handoff_gap_s"], "%.2f s" % fo if fo is not None else "—",
            lease["lease_ttl_s"]), c,
        tgt=target("cluster-lease", ticks_ok=t["ticks"] == t["expected"], handoff=lease["handoff_gap_s"],
                   failover=fo, ttl=lease["lease_ttl_s"]))


def read_detect_failover(d):
    c = cmd(d, "bench/detect-failover.sh")
    rr = d["restore_replay"]
    # Each replay's alerts stored by the bus alone, on the same server (the floor under
    # the replay's time: an alert is stored with its PubAck before the unit moves on).
    floors = [r for r in rr if r.get("bus_floor")]
    row(d, "detect restore + replay at %s open runs" % d.get("lag"),
        "; ".join("%s events replayed: restore %s ms, caught up %s ms after start%s" % (
            r["replayed_events"], r["restore_ms"], r["start_to_caught_up_ms"],
            ", %s" % rate(r["replay_rate"]) if r.get("replay_rate") else "") for r in rr) +
        "; checkpoint %.0f B per open run" % rr[0]["bytes_per_open_run"], c,
        "; ".join("the bus alone storing the %s alerts of %s events replayed: %s ms" % (
            r["bus_floor"]["messages"], r["replayed_events"], r["bus_floor"]["ms"]) for r in floors) or None,
        "; ".join("%.2f" % r["over_floor"] for r in floors) or None,
        tgt=target("detect-restore", lag=d.get("lag"), bytes=rr[0]["bytes_per_open_run"],
                   ms=next(r["start_to_caught_up_ms"] for r in rr if r["replayed_events"] == 20000)))
    f = d["failover"]
    row(d, "detect failover, 3 processes, %s events/s" % f["events_per_s"],
        "gap %s ms after kill -9 (lease_ttl %s ms), %s ms after a clean stop" % (
            f["gap_after_kill_ms"], f["lease_ttl_ms"], f["gap_after_clean_stop_ms"]), c,
        tgt=target("detect-failover", kill=f["gap_after_kill_ms"], kill_target=f["target_after_kill_ms"],
                   term=f["gap_after_clean_stop_ms"], term_target=f["target_after_clean_stop_ms"]))


def warm_cold(r):
    """A configuration's rates: warm (the events in cache, as a unit reads them: what the
    targets read) beside cold (every event read from DRAM), or cold alone from a run
    made before the warm method."""
    if r.get("warm_rate_median") is None:
        return "%s cold" % rate(r.get("rate_median"))
    return "%s warm (%s cold)" % (rate(r["warm_rate_median"]), rate(r.get("rate_median")))


def read_vpl_engine(d):
    c = cmd(d, "bench/vpl-engine.sh")
    o = d.get("orders") or {}
    row(d, "VPL engine alone, orders program", warm_cold(o), c,
        tgt=target("vpl-orders", rate=o.get("warm_rate_median")))
    seq = get(d, "sequence_distinct_hosts", "results") or []
    at10k = next((r for r in seq if r["lag"] == 10000), None)
    if seq:
        worst = max(r["bytes_per_open_run"] for key in ("sequence", "sequence_distinct_hosts")
                    for r in get(d, key, "results") or [])
        shown = [r for r in (at10k, seq[-1]) if r]
        row(d, "VPL engine alone, sequence program, one host per open run",
            "; ".join("%s with %s open runs" % (warm_cold(r), "{:,}".format(round(r["open_runs_mean"])).replace(",", " "))
                      for r in shown) + "; ≤ %.0f B per open run" % worst, c,
            tgt=target("vpl-sequence", rate_10k=get(at10k, "warm_rate_median"), bytes=worst))
    for key, scenario in (("join", "VPL engine alone, join(Order, Payment).on(...).window(1s), ~100 held a side"),
                          ("fn", "VPL engine alone, orders with a fn block")):
        if get(d, key, "rate_median") is not None:
            row(d, scenario, warm_cold(d[key]), c, tgt=target("report"))


def read_soak(d):
    start, end = d.get("start") or {}, d.get("end") or {}
    row(d, "soak: %s min of load, a fault every %s s (nats frozen, sink down, SIGHUP, stuck flow, store full)"
        % (d.get("minutes"), d.get("fault_every_s")),
        "%s accepted, %s delivered, %s lost, %s duplicates, %s dead-lettered (%s stuck); RSS %.1f → %.1f MB, "
        "fds %s → %s" % (
            d.get("accepted"), d.get("delivered"), d.get("lost"), d.get("duplicates"), d.get("dead_lettered"),
            d.get("stuck_events"),
            mb(start.get("rss_kb")) or 0, mb(end.get("rss_kb")) or 0, start.get("fds"), end.get("fds")),
        cmd(d, "bench/soak.sh"),
        tgt=target("soak", lost=d.get("lost"), dups=d.get("duplicates"), accepted=d.get("accepted"), rss0=mb(start.get("rss_kb")),
                   rss1=mb(end.get("rss_kb")), fds0=start.get("fds"), fds1=end.get("fds")))


def read_bus(d):
    c = cmd(d, "bench/bus.sh")
    ceiling = target("ceiling")
    for key, label in (("core_pubsub_128", "core pub/sub 128 B"), ("core_pubsub_1k", "core pub/sub 1 KiB"),
                       ("js_async_publish", "JetStream async publish"),
                       ("pull_fetch_ack_64", "pull fetch + ack, batch 64"),
                       ("pull_fetch_ack_256", "pull fetch + ack, batch 256"),
                       ("relay_publish_before_ack", "bare relay, publish before ack"),
                       ("e2e_path", "the end-to-end path's JetStream work (store, hop, sink)"),
                       ("e2e_path_32_in_flight", "the same path, 32 publishes in flight")):
        if get(d, key, "rate_median") is not None:
            row(d, "the bus alone: " + label, rate(get(d, key, "rate_median")), c, tgt=ceiling)
    for key, label in (("request_reply_send_asap", "request/reply, send_asap"),
                       ("request_reply_default", "request/reply, buffered")):
        r = d.get(key)
        if r:
            row(d, "the bus alone: " + label, "p50 %s, p99 %s" % (ms(get(r, "latency_ms", "p50")),
                ms(get(r, "latency_ms", "p99"))), c, tgt=ceiling)
            lat.append(("bus " + label.replace("request/reply", "req/rep"), get(r, "latency_ms", "p50"),
                        get(r, "latency_ms", "p90"), get(r, "latency_ms", "p99")))
    r = d.get("e2e_path_at_20_per_s")
    if r:
        row(d, "the bus alone: the same path at 20 events/s", "p50 %s, p99 %s" % (
            ms(get(r, "latency_ms", "p50")), ms(get(r, "latency_ms", "p99"))), c, tgt=ceiling)
    f = d.get("flood")
    if f:
        r0 = get(f, "rounds", 0) or {}
        row(d, "the bus alone: flood, %s publishers × %s" % (r0.get("publishers"), r0.get("per_publisher")),
            "drain %.2f s (%s), latency p50 %s, p99 %s" % (f.get("drain_seconds_median", 0), rate(f.get("rate_median")),
            ms(f.get("latency_ms_p50_median")), ms(f.get("latency_ms_p99_median"))), c, tgt=ceiling)
        lat.append(("bus flood", f.get("latency_ms_p50_median"), f.get("latency_ms_p90_median"),
                    f.get("latency_ms_p99_median")))


def read_compare(d):
    c = cmd(d, "bench/compare/run.sh")
    nr = "Node-RED %s" % get(d, "node_red", "version") if get(d, "node_red", "version") else "Node-RED"
    g, n = get(d, "gust", "e2e", "delivered_per_s_median"), get(d, "node_red", "e2e", "delivered_per_s_median")
    gp, np_ = (get(d, s, "e2e", "latency_ms_median_of_rounds", "p99") for s in ("gust", "node_red"))
    row(d, "gust vs %s, end to end, same orders work" % nr, "%s delivered, p99 %s" % (rate(g), ms(gp)), c,
        "%s, p99 %s" % (rate(n), ms(np_)), ratio(g, n), target("compare-e2e", ratio=ratio(g, n), p99_ratio=ratio(gp, np_)))
    bars.append(("vs Node-RED", g, n))
    g, n = get(d, "gust", "mqtt", "round_trips_per_s_median"), get(d, "node_red", "mqtt", "round_trips_per_s_median")
    row(d, "gust vs %s, MQTT QoS 1 round trips" % nr, rate(g), c, rate(n), ratio(g, n),
        target("compare-mqtt", ratio=ratio(g, n)))
    peak = lambda s: max((v for v in (get(d, s, "rss_peak_kb") or {}).values() if v), default=None)
    g, n = peak("gust"), peak("node_red")
    row(d, "gust vs %s, peak RSS" % nr, "%.1f MB" % mb(g) if g else "—", c, "%.0f MB" % mb(n) if n else None,
        ratio(g, n), target("compare-rss", ratio=ratio(g, n)))


def read_topology(d):
    t, lz = d.get("topology") or {}, d.get("livez") or {}
    row(d, "GET /topology (the console's graph) at %s units" % d.get("units"),
        "p50 %s, p99 %s" % (ms(t.get("p50_ms")), ms(t.get("p99_ms"))), cmd(d, "bench/topology.sh"),
        "/livez p50 %s, p99 %s" % (ms(lz.get("p50_ms")), ms(lz.get("p99_ms"))),
        tgt=target("topology", units=d.get("units"), p50=t.get("p50_ms")))


def read_otlp(d):
    # Medians over rounds; a file from before the rounds has one run, its "load".
    off, s1, s001 = (get(d, k, "rate_median") or get(d, k, "load", "rate") for k in ("off", "sample_1", "sample_0_01"))
    row(d, "ingest with traces exported (otlp sample 1.0 / 0.01)", "%s / %s" % (rate(s1), rate(s001)),
        cmd(d, "bench/otlp.sh"), "otlp off %s" % rate(off), ratio(s001, off),
        target("otlp", ratio=ratio(s001, off)))


def read_call(d):
    c, base = d.get("call") or {}, d.get("baseline_ingest") or {}
    lat = c.get("latency_ms") or {}
    row(d, "POST /call round trips through one flow (reply())",
        "%s, p50 %s, p99 %s" % (rate(c.get("rate")), ms(lat.get("p50")), ms(lat.get("p99"))),
        cmd(d, "bench/call.sh"), "plain ingest %s" % rate(base.get("rate")), ratio(c.get("rate"), base.get("rate")),
        target("report"))


def read_sink_batch(d):
    b1, b100, off, on = (get(d, k, "rate") for k in ("batch_1", "batch_100", "rate_off", "rate_on"))
    c = cmd(d, "bench/sink-batch.sh")
    svc = d.get("batch_far_end_service_us")
    far = "a far end spending %g ms a request" % (svc / 1000) if svc else "a far end answering at once"
    row(d, "http_out batching, %s: batch_max 100 against batch_max 1" % far, rate(b100), c,
        "batch_max 1 %s" % rate(b1),
        ratio(b100, b1), target("sink-batch", ratio=ratio(b100, b1)))
    bars.append(("http_out batch_max 100", b100, b1))
    row(d, "http_out rate limiter at a limit never reached (rate 10000000/s)", rate(on), c, "no rate %s" % rate(off),
        ratio(on, off), target("sink-rate", ratio=ratio(on, off)))


BROKER_PATHS = (("kafka", "Kafka (librdkafka's mock cluster): kafka_in → JetStream → kafka_out"),
                ("redis", "Redis Streams: redis_in → JetStream → redis_out"),
                ("amqp", "RabbitMQ: amqp_in → JetStream → amqp_out"))


def read_brokers(d):
    # Two ceilings from the same run: the broker's own relay and the bus alone on the same
    # path; the ratio is to the lower of the two.
    for key, label in BROKER_PATHS:
        b = d.get(key)
        if b is None:  # BROKERS= ran a subset
            continue
        g, broker, bus = b["rate_median"], get(b, "broker_ceiling", "rate_median"), get(b, "bus_ceiling", "rate_median")
        lower = min(broker, bus)
        row(d, label, "%s, every id once, gust %s µs CPU a message" % (rate(g), b.get("gust_cpu_us_per_msg_median")),
            cmd(d, "bench/brokers.sh"), "%s %s; the bus alone %s" % (
                get(b, "broker_ceiling", "tool").split(" (")[0], rate(broker), rate(bus)),
            ratio(g, lower), target("brokers", ratio=ratio(g, lower)))
        bars.append(("%s bridge" % key, g, lower))


# Every results file a benchmark writes: name -> (the script that writes it, its reader).
READERS = {
    "ingest": ("bench/ingest.sh", read_ingest),
    "run": ("bench/run.sh", read_run),
    "paced-20": ("bench/paced.sh", read_paced),
    "paced-3000": ("bench/paced.sh", read_paced),
    "flow-hop": ("bench/flow-hop.sh", read_flow_hop),
    "multi-flow": ("bench/multi-flow.sh", read_multi_flow),
    "detect": ("bench/detect.sh", read_detect),
    "detect-lag-10000": ("LAG=10000 bench/detect.sh", read_detect),
    "detect-lag-100000": ("LAG=100000 bench/detect.sh", read_detect),
    "replay": ("bench/replay.sh", read_replay),
    "detect-failover": ("bench/detect-failover.sh", read_detect_failover),
    "vpl-engine": ("bench/vpl-engine.sh", read_vpl_engine),
    "broker-mqtt": ("bench/broker-mqtt.sh", read_broker_mqtt),
    "mqtt-ladder": ("bench/mqtt-ladder.sh", read_mqtt_ladder),
    "mqtt-cpu": ("bench/mqtt-cpu.sh", read_mqtt_cpu),
    "cluster": ("bench/cluster.sh", read_cluster),
    "compare": ("bench/compare/run.sh", read_compare),
    "bus": ("bench/bus.sh", read_bus),
    "soak": ("bench/soak.sh", read_soak),
    "topology": ("bench/topology.sh", read_topology),
    "otlp": ("bench/otlp.sh", read_otlp),
    "call": ("bench/call.sh", read_call),
    "sink-batch": ("bench/sink-batch.sh", read_sink_batch),
    "brokers": ("bench/brokers.sh", read_brokers),
}
# Read when there, never noted as missing: a comparison of two builds, run when a change
# needs it.
OPTIONAL = {"mqtt-cpu", "detect-lag-10000", "detect-lag-100000", "soak"}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError as e:
        notes.append("`results/%s` is not valid JSON (%s): skipped." % (os.path.basename(path), e))
        return None


def read_generically(name, d):
    flat = []

    def walk(prefix, v, depth):
        if isinstance(v, dict) and depth < 3:
            for k, x in v.items():
                walk(prefix + "." + k if prefix else k, x, depth + 1)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            flat.append((prefix, v))
    walk("", d, 0)
    nums = [(k, v) for k, v in flat if re.search(r"rate|ceiling|per_s|p50|p99", k.split(".")[-1])]
    row(d, "%s (read generically)" % name, ", ".join("%s %s" % (k, v) for k, v in nums[:4]) or "no figures found",
        d.get("command") or "")


files = {os.path.basename(p)[:-5]: p for p in glob.glob(os.path.join(results, "*.json"))}
data = {}
for name in list(READERS) + sorted(set(files) - set(READERS)):
    if name not in files:
        if name in OPTIONAL:
            continue
        notes.append("`results/%s.json` is missing (%s has not written it)." % (name, READERS[name][0]))
        continue
    d = load(files[name])
    if not isinstance(d, dict):
        continue
    data[name] = d
    if name not in READERS:
        read_generically(name, d)
        continue
    mark = (len(rows), len(bars), len(lat))
    try:
        READERS[name][1](d)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError) as e:
        del rows[mark[0]:], bars[mark[1]:], lat[mark[2]:]
        notes.append("`results/%s.json` does not have the shape its reader expects (%s: %s): shown generically."
                     % (name, type(e).__name__, e))
        read_generically(name, d)

# ---- the markdown ----
lines = ["| scenario | command | gust | baseline (same run) | ratio | target | commit | load (1 min, start → end) |",
         "|---|---|---|---|---|---|---|---|"]
for r in rows:
    lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
lines.append("")

recorded = {n: d for n, d in data.items() if d.get("commit")}
stale = sorted(n for n, d in data.items() if not d.get("commit"))
if recorded:
    def values(key):
        return ", ".join(sorted({str(d.get(key, "not recorded")) for d in recorded.values()}))
    dates = sorted(d.get("date", "") for d in recorded.values())
    lines.append("Runs that record where they come from (%d of %d files): CPU %s; %s cores; build %s; %s to %s." % (
        len(recorded), len(data), values("cpu_model"), values("cores"), values("build_type"), dates[0], dates[-1]))
    lines.append("")
if stale:
    lines.append("Still to be run afresh: these files predate the provenance fields (commit, CPU, build "
                 "type, date, load), and NOTES.md dates their runs: %s." %
                 ", ".join("`results/%s.json`" % n for n in stale))
    lines.append("")


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
    write("throughput.dat", "".join("%s\t%s\t%s\n" % (label, num(g), num(b)) for label, g, b in bars))
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
    write("latency.dat", "".join("%s\t%s\t%s\t%s\n" % (label, num(a), num(b), num(c)) for label, a, b, c in lat))
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
    for key, title in (("sequence", "bench/WORKLOAD.md generator (500 hosts)"),
                       ("sequence_distinct_hosts", "one host per open run"),
                       ("sequence_unpartitioned", "no .partition_by, 500 hosts"),
                       ("sequence_unpartitioned_distinct_hosts", "no .partition_by, one host per run")):
        res = get(d, key, "results") or []
        if res:
            write(key + ".dat", "".join("%g\t%g\t%s\n" % (max(r["open_runs_mean"], 1),
                                                            r.get("warm_rate_median") or r["rate_median"], r["lag"])
                                        for r in sorted(res, key=lambda r: r["open_runs_mean"])))
            s = '"%s/%s.dat" using 1:2 with linespoints lw 2 pt 7 title "%s"' % (work, key, title)
            if len(series) < 2:  # LAG labels on the two partitioned series only, one above, one below
                s += ', "" using 1:2:(sprintf("LAG %%s", strcol(3))) with labels offset 0,%s font ",8" notitle' % (
                    "1" if not series else "-1")
            series.append(s)
    if series:
        plot("vpl-lag", """set title "Correlation engine alone: rate against open runs (sequence program%s, median of reps)"
set logscale x
set xlabel "mean open runs (log)"
set ylabel "events/s"
set yrange [0:*]
set key bottom left
plot %s
""" % (", warm" if any("warm_rate_median" in r for k in ("sequence", "sequence_distinct_hosts")
                    for r in get(d, k, "results") or []) else "",
       ", \\\n     ".join(series)))

d = data.get("multi-flow")
if d and d.get("runs"):
    write("multi.dat", "".join("%d\t%g\t%g\n" % (r["flows"], r["rss_kb"] / 1000, get(r, "count", "rate") or 0)
                               for r in d["runs"]))
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
    write("bus.dat", "".join("%s\t%s\n" % (label, num(get(d, k, "rate_median"))) for label, k in items))
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
lines.extend("- " + n for n in notes)
if notes:
    lines.append("")
rel = os.path.relpath(plots, os.path.dirname(os.path.abspath(readme)))
for name, out in made:
    lines.append("![%s](%s/%s.png)" % (name, rel, name))
block = "<!-- report:begin -->\n<!-- written by bench/report.sh from results/*.json; edits here are overwritten -->\n" + \
        "\n".join(lines) + "\n<!-- report:end -->"
text = open(readme).read() if os.path.exists(readme) else ""
if "<!-- report:begin -->" in text and "<!-- report:end -->" in text:
    text = re.sub(r"<!-- report:begin -->.*?<!-- report:end -->", lambda m: block, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n## Latest figures\n\n" + block + "\n"
with open(readme, "w") as f:
    f.write(text)
print("report: %d rows, %d plots in %s, README %s" % (len(rows), len(made), plots, readme))
for n in notes:
    print("note: " + n)
