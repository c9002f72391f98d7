"""bench/cluster.sh [INSTANCES...] [-n N]: several gust processes with one host.conf on
one nats-server. Run by cluster.sh; prints one JSON document and writes it to
bench/results/cluster.json when nothing was lost and the timer ticked as it should
(bench/provenance.py).

1. Shared work, for each instance count: N orders events stored first, then the
   processes run the orders flow on one durable consumer; one is killed with -9 at
   1.5 s. A counter checks every output id: delivered, duplicates (what the dead process
   had emitted but not acked comes again), time to drain, and each process's share.
2. A 1 s timer over 8 s with every process running it: it ticks 8 times, not 8 per
   process (one lease).
3. Handoff and failover of that lease: with a 100 ms timer, the gap in ticks when the
   leader gets SIGTERM (it gives the lease back), then when the new leader gets kill -9
   (the lease must expire: lease_ttl)."""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

import provenance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from gustlib import Gust, NatsServer, TempDir, wait_for  # noqa: E402

BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TOOLS = os.path.join(BUILD, "bench")
LEASE_TTL_S = 6

CONF = """
log_level warn;
node_name %(node)s;
http { listen 127.0.0.1:@PORT@; }
nats { url %(url)s; ack_wait 2s; lease_ttl %(ttl)ds; lease_poll 200ms; }
%(units)s
"""


def start(tmp_root, nats, node, units):
    tmp = TempDir()
    tmp_root.append(tmp)
    return Gust(tmp, CONF % {"node": node, "url": nats.url, "ttl": LEASE_TTL_S, "units": units})


def units_json(g):
    return json.loads(g.request("GET", "/units")[1])


def stop_all(procs):
    for g in procs:
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait(10)


def shared_work(instances, n):
    tmps = []
    tmp = TempDir()
    nats = NatsServer(tmp)
    procs = []
    try:
        # The streams exist once a gust has run; store the events before any consumer.
        first = start(tmps, nats, "node-1", "")
        first.stop()
        subprocess.run([os.path.join(TOOLS, "gust-bench-pub"), nats.url, "ev.orders", str(n)], check=True,
                       capture_output=True)
        counter = subprocess.Popen([os.path.join(TOOLS, "gust-bench-counter"), nats.url, "ev.orders.out", str(n),
                                    "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The counter says "ready" on stderr once subscribed.
        line = counter.stderr.readline()
        assert "ready" in line, line
        unit = "flow orders { script %s/scripts/bench_orders.lua; source ev.orders; }" % ROOT
        t0 = time.monotonic()
        for i in range(instances):
            procs.append(start(tmps, nats, "node-%d" % (i + 1), unit))
        time.sleep(max(0.0, 1.5 - (time.monotonic() - t0)))
        victim = procs[-1]
        victim.proc.kill()
        victim.proc.wait(10)
        killed_at = time.monotonic() - t0
        out, _ = counter.communicate(timeout=180)
        drained = time.monotonic() - t0
        count = json.loads(out)
        shares = {}
        for g in procs[:-1]:
            u = [x for x in units_json(g)["units"] if x["name"] == "orders"][0]
            shares[g.conf] = u["events_ok"]
        survivors = list(shares.values())
        return {
            "instances": instances, "events": n, "killed_at_s": round(killed_at, 2),
            "delivered_unique": count["unique"], "duplicates": count["duplicates"],
            "lost": n - count["unique"], "drain_s": round(drained, 2),
            "survivor_events_ok": survivors,
            "survivor_share": [round(s / max(1, sum(survivors)), 3) for s in survivors],
        }
    finally:
        stop_all(procs)
        nats.stop()
        for t in tmps + [tmp]:
            t.cleanup()


def ticks(nats):
    out = []
    for _, subject, data in nats.read_stream():
        if subject == "ev.tick":
            out.append(json.loads(data)["ts_ms"])
    return sorted(out)


def timer_runs(instances):
    tmps = []
    tmp = TempDir()
    nats = NatsServer(tmp)
    procs = []
    try:
        unit = "plugin timer;\nsource tick { use timer; interval 1s; subject ev.tick; align on; }"
        for i in range(instances):
            procs.append(start(tmps, nats, "node-%d" % (i + 1), unit))
        first = wait_for(lambda: ticks(nats), 5, "a first tick")[0]
        time.sleep(max(0.0, first / 1000.0 + 8.5 - time.time()))
        # Ticks land on the second give or take a few ms: count those of 8 seconds.
        got = [t for t in ticks(nats) if first - 500 <= t < first + 7500]
        return {"instances": instances, "interval_s": 1, "window_s": 8, "ticks": len(got), "expected": 8}
    finally:
        stop_all(procs)
        nats.stop()
        for t in tmps + [tmp]:
            t.cleanup()


def leader_of(procs):
    for g in procs:
        if g.proc.poll() is None:
            lease = [x for x in units_json(g)["cluster"]["leases"] if x["name"] == "tick"]
            if lease and lease[0]["held"]:
                return g
    return None


def gap_after(nats, t_ms):
    """The longest pause between ticks around t_ms (ms since the epoch), in seconds."""
    ts = ticks(nats)
    around = [t for t in ts if t >= t_ms - 500]
    gaps = [b - a for a, b in zip(around, around[1:])]
    return round(max(gaps) / 1000.0, 3) if gaps else None


def handoff(instances):
    tmps = []
    tmp = TempDir()
    nats = NatsServer(tmp)
    procs = []
    try:
        unit = "plugin timer;\nsource tick { use timer; interval 100ms; subject ev.tick; }"
        for i in range(instances):
            procs.append(start(tmps, nats, "node-%d" % (i + 1), unit))
        wait_for(lambda: len(ticks(nats)) >= 5, 5, "ticks")
        leader = leader_of(procs)
        t_term = time.time() * 1000
        leader.proc.send_signal(signal.SIGTERM)
        leader.proc.wait(10)
        n0 = len(ticks(nats))
        wait_for(lambda: len(ticks(nats)) >= n0 + 10, 20, "ticks from the new leader")
        handoff_gap = gap_after(nats, t_term)
        leader = wait_for(lambda: leader_of(procs), 5, "a new leader")
        t_kill = time.time() * 1000
        leader.proc.kill()
        leader.proc.wait(10)
        n1 = len(ticks(nats))
        if instances > 2:
            wait_for(lambda: len(ticks(nats)) >= n1 + 10, LEASE_TTL_S + 20, "ticks after the failover")
            failover_gap = gap_after(nats, t_kill)
        else:
            failover_gap = None  # no third process to take over
        return {"instances": instances, "tick_interval_s": 0.1, "lease_ttl_s": LEASE_TTL_S,
                "handoff_gap_s": handoff_gap, "failover_gap_s": failover_gap}
    finally:
        stop_all(procs)
        nats.stop()
        for t in tmps + [tmp]:
            t.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("instances", nargs="*", type=int, default=[2, 3])
    ap.add_argument("-n", type=int, default=100000)
    a = ap.parse_args()
    started = provenance.start()
    result = {"scenario": "cluster", "shared_work": [shared_work(k, a.n) for k in a.instances],
              "timer": timer_runs(max(a.instances)),
              "lease": handoff(max(3, max(a.instances)))}
    result["targets"] = {"lost": 0, "handoff_gap_s_under": 1.5, "failover_gap_s_under": LEASE_TTL_S + 1}
    # The figures stand only if nothing was lost and the singleton ran once: otherwise fail.
    wrong = ["%d instances lost %d events" % (r["instances"], r["lost"]) for r in result["shared_work"] if r["lost"]]
    if result["timer"]["ticks"] != result["timer"]["expected"]:
        wrong.append("the timer ticked %d times, not %d" % (result["timer"]["ticks"], result["timer"]["expected"]))
    provenance.emit("cluster", result, BUILD, started, ok=not wrong)
    if wrong:
        sys.exit("cluster: " + "; ".join(wrong))


if __name__ == "__main__":
    main()
