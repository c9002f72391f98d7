"""bench/soak.sh [--minutes M=30] [--every S=60] [--rate R=200] [--faults K,K..]: gust left alone under
mixed load while faults come every S seconds, in turn:

  nats_freeze   nats-server stopped (SIGSTOP) for 15 s, then thawed
  sink_down     the HTTP sink answers 503 for 20 s
  sighup        a reload
  stuck_flow    one event to a flow whose pattern match never ends (its timeout must
                fail it: retried, then dead-lettered)
  store_full    the sink down and ingest as fast as it goes until gust answers
                503 "store full" (or 40 s), then the sink back

Steady load: R events/s posted to /ingest/soak (unique ids), through a pass-through flow
and http_out to a recording sink. At the end the load stops and the sink must receive
every accepted event within 180 s. Prints one JSON object: events accepted, delivered,
duplicates (and, by kind, the fault each second copy followed), dead-lettered, lost
(accepted and never delivered: must be 0), how often /healthz was not 200, gust's RSS
and open fds after warm-up and at the end. Writes
bench/results/soak.json when nothing was lost and each stuck event was dead-lettered."""
import argparse
import json
import os
import signal
import sys
import threading
import time

import provenance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from gustlib import Gust, HttpSink, NatsServer, TempDir, wait_for  # noqa: E402

BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))

CONF = """
log_level warn;
plugin_dir %(plugins)s;
plugin http_out;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_deliver 3; retry_delay 100ms; retry_max_delay 2s; max_bytes 8m; keep 1m; }
flow pass  { script %(tmp)s/pass.lua; source ev.soak; }
flow stuck { script %(tmp)s/stuck.lua; source ev.stuck; timeout 1s; }
sink out   { use http_out; source ev.soak.out; url http://127.0.0.1:%(sink)d/hit; timeout 2s; }
"""

PASS = """
return { on_event = function(ev) emit("ev.soak.out", ev) end }
"""

# A backtracking pattern that does not finish in any reasonable time without a budget.
STUCK = """
return { on_event = function(ev)
  string.find(string.rep("a", 5000), ".-.-.-.-b")
end }
"""

PAD = "x" * 400


class Loader:
    """Posts events with unique ids at a steady rate on one keep-alive connection;
    remembers every id answered 202. burst() adds connections that post as fast as
    they can until told to stop."""

    def __init__(self, gust, rate):
        self.gust = gust
        self.rate = rate
        self.accepted = set()
        self.refused = {}
        self.lock = threading.Lock()
        self.next_id = 0
        self.stopping = threading.Event()
        self.bursting = threading.Event()
        self.threads = [threading.Thread(target=self.steady, daemon=True)]
        for _ in range(3):
            self.threads.append(threading.Thread(target=self.burst_worker, daemon=True))
        for th in self.threads:
            th.start()

    def new_id(self):
        with self.lock:
            self.next_id += 1
            return "s-%d" % self.next_id

    def post_one(self):
        eid = self.new_id()
        body = json.dumps({"id": eid, "pad": PAD}).encode()
        try:
            status, reply, _ = self.gust.request("POST", "/ingest/soak", body, timeout=5)
        except OSError:
            status, reply = 0, b"connection"
        with self.lock:
            if status == 202:
                self.accepted.add(eid)
            else:
                key = "%d %s" % (status, reply[:60].decode(errors="replace"))
                self.refused[key] = self.refused.get(key, 0) + 1
        return status, reply

    def steady(self):
        period = 1.0 / self.rate
        t = time.monotonic()
        while not self.stopping.is_set():
            self.post_one()
            t += period
            delay = t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                t = time.monotonic()

    def burst_worker(self):
        while not self.stopping.is_set():
            if not self.bursting.wait(0.2):
                continue
            self.post_one()

    def stop(self):
        self.stopping.set()
        for th in self.threads:
            th.join(10)


def copies_after_faults(arrivals, faults, t0):
    """For each second copy of an id at the sink: the fault that last began before it
    came, counted by kind (at least once: which fault makes a copy is worth knowing)."""
    seen, by_kind = set(), {}
    for t, body in arrivals:
        eid = json.loads(body)["id"]
        if eid not in seen:
            seen.add(eid)
            continue
        since = [f for f in faults if f["at_s"] <= t - t0]
        kind = since[-1]["kind"] if since else "none"
        by_kind[kind] = by_kind.get(kind, 0) + 1
    return by_kind


def proc_usage(pid):
    with open("/proc/%d/status" % pid) as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return {"rss_kb": rss, "fds": len(os.listdir("/proc/%d/fd" % pid))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--every", type=float, default=60)
    ap.add_argument("--rate", type=float, default=200)
    ap.add_argument("--faults", default="nats_freeze,sink_down,sighup,stuck_flow,store_full",
                    help="the faults, in turn (a subset to try one)")
    args = ap.parse_args()

    started = provenance.start()
    tmp = TempDir()
    tmp.file("pass.lua", PASS)
    tmp.file("stuck.lua", STUCK)
    nats = NatsServer(tmp)
    sink_up = threading.Event()
    sink_up.set()
    # When each id was answered 200, to tell which fault a copy followed.
    arrivals = []

    def sink_status(body):
        if not sink_up.is_set():
            return 503
        arrivals.append((time.monotonic(), body))
        return 200

    sink = HttpSink(status=sink_status)
    conf = CONF % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "tmp": tmp.path, "sink": sink.port}
    g = Gust(tmp, conf)
    loader = Loader(g, args.rate)
    health = {"polls": 0, "not_ok": 0, "unanswered": 0}
    done = threading.Event()

    def poll_health():
        while not done.wait(1.0):
            health["polls"] += 1
            try:
                if g.request("GET", "/healthz", timeout=3)[0] != 200:
                    health["not_ok"] += 1
            except OSError:
                health["unanswered"] += 1

    threading.Thread(target=poll_health, daemon=True).start()

    def nats_freeze():
        nats.proc.send_signal(signal.SIGSTOP)
        time.sleep(15)
        nats.proc.send_signal(signal.SIGCONT)

    def sink_down():
        sink_up.clear()
        time.sleep(20)
        sink_up.set()

    def sighup():
        g.proc.send_signal(signal.SIGHUP)

    def stuck_flow():
        g.request("POST", "/ingest/stuck", b'{"n":1}')

    def store_full():
        sink_up.clear()
        loader.bursting.set()
        before = sum(n for k, n in loader.refused.items() if "store full" in k)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 40:
            if sum(n for k, n in loader.refused.items() if "store full" in k) > before:
                break
            time.sleep(0.2)
        loader.bursting.clear()
        sink_up.set()

    every_kind = {f.__name__: f for f in (nats_freeze, sink_down, sighup, stuck_flow, store_full)}
    kinds = [every_kind[k] for k in args.faults.split(",")]
    faults = []
    failed_checks = []
    try:
        time.sleep(min(10, args.every / 2))
        at_start = proc_usage(g.proc.pid)
        t0 = time.monotonic()
        end = t0 + args.minutes * 60
        i = 0
        while time.monotonic() + args.every <= end + 0.1:
            time.sleep(max(0.0, t0 + (i + 1) * args.every - time.monotonic()))
            kind = kinds[i % len(kinds)]
            faults.append({"at_s": round(time.monotonic() - t0, 1), "kind": kind.__name__})
            kind()
            i += 1
        time.sleep(max(0.0, end - time.monotonic()))
        loader.stop()
        accepted = set(loader.accepted)

        def delivered_ids():
            ids = [json.loads(b)["id"] for b in sink.received()]
            return ids

        try:
            wait_for(lambda: accepted <= set(delivered_ids()), 180, "every accepted event at the sink")
        except AssertionError as e:
            failed_checks.append(str(e))
        if g.proc.poll() is not None:
            failed_checks.append("gust exited with %s" % g.proc.returncode)
        at_end = proc_usage(g.proc.pid)
        ids = delivered_ids()
        delivered = set(ids)
        stuck = sum(1 for f in faults if f["kind"] == "stuck_flow")
        duplicates_after = copies_after_faults(arrivals, faults, t0)
        dead = nats.count("GUST_DLQ")
    finally:
        done.set()
        loader.stopping.set()
        if g.proc.poll() is None:
            g.stop(timeout=20)
        nats.stop()
        sink.close()

    result = {
        "scenario": "soak",
        "minutes": args.minutes,
        "fault_every_s": args.every,
        "rate": args.rate,
        "faults": faults,
        "accepted": len(accepted),
        "delivered": len(delivered & accepted),
        "duplicates": len(ids) - len(delivered),
        "duplicates_after": duplicates_after,
        "refused": loader.refused,
        "dead_lettered": dead,
        "stuck_events": stuck,
        "lost": len(accepted - delivered),
        "healthz": health,
        "start": at_start,
        "end": at_end,
    }
    if result["lost"]:
        failed_checks.append("%d accepted events never delivered" % result["lost"])
    if dead != stuck:
        failed_checks.append("dead letters %d, stuck events %d" % (dead, stuck))
    if failed_checks:
        result["failed"] = failed_checks
    provenance.emit("soak", result, BUILD, started, ok=not failed_checks)
    sys.exit(1 if failed_checks else 0)


if __name__ == "__main__":
    main()
