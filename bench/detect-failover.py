"""bench/detect-failover.sh [--lag L] [--ttl S]: a detect unit's state under restarts
and failover, with the sequence workload of bench/WORKLOAD.md (rules/bench_sequence.vpl:
a NetworkConnect opens a run per pair, the pair's ProcessCreate LAG pairs later closes
it). Prints one JSON document and writes it to bench/results/detect-failover.json when
every check passed (bench/provenance.py).

1. Restore + replay at LAG open runs. One gust stores the first LAG+1 events (LAG runs
   open) and checkpoints them; it is killed with -9. While it is down, R more events are
   stored (R = 0, 20 000, 100 000: pairs close and open, LAG stay open). A new gust
   restores the checkpoint and replays the R events: the time from its start to its
   position reaching the last event (its cold start included), its restore time as
   /units says, and the replay rate. Checked: the alerts stored are exactly what
   `gust vpl-run` prints for the events stored, in stream order, each once. Beside a
   replay that stores alerts, the bus's own floor in the same run, on the same server:
   `gust-bench-bus jspub` storing as many messages of the alerts' mean size, each with a
   Nats-Msg-Id as the alerts have, from one connection with WINDOW PubAcks awaited.
2. Failover gap. Three gust processes run the unit (one holds it, under its lease), a
   publisher stores pairs at a steady rate (LAG 100), a subscriber times every alert.
   The holder is killed with -9: the gap in alerts lasts until its lease expires
   (lease_ttl) and a peer has restored its checkpoint and replayed. Then the new holder
   is stopped cleanly (SIGTERM: a final checkpoint, the lease given back): a peer takes
   over at its next look. Checked as in 1."""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import provenance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from detect_oracle import key, vpl_run  # noqa: E402
from gustlib import Gust, NatsServer, TempDir, read_stream, wait_for  # noqa: E402

BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TOOLS = os.path.join(BUILD, "bench")
T0 = 1600000000000


def program(tmp):
    src = open(os.path.join(ROOT, "rules", "bench_sequence.vpl")).read()
    src = src.replace('"IN_SUBJECT_PROC"', '"ev.seq.in.proc"').replace('"IN_SUBJECT"', '"ev.seq.in.net"')
    src = src.replace('"OUT_SUBJECT"', '"ev.seq.alerts"')
    return tmp.file("seq.vpl", src)


def net(i, hosts=500):
    return ("ev.seq.in.net", json.dumps({
        "event_type": "SysmonNetworkConnect", "ts": T0 + i, "t": T0 + i, "Image": "C:\\tools\\svc.exe",
        "DestinationIp": "10.%d.%d.%d" % ((i >> 16) & 255, (i >> 8) & 255, i & 255), "DestinationPort": 445,
        "Hostname": "h%d" % (i % hosts)}).encode())


def proc(i, lag, hosts=500):
    return ("ev.seq.in.proc", json.dumps({
        "event_type": "SysmonProcessCreate", "ts": T0 + i + lag, "t": T0 + i + lag,
        "Image": "C:\\Windows\\System32\\cmd.exe", "ParentImage": "C:\\Windows\\System32\\services.exe",
        "Hostname": "h%d" % (i % hosts)}).encode())


def stream_of(pairs, lag, first=0):
    """The generator's order: step j publishes pair j's NetworkConnect, then the
    ProcessCreate of pair j - lag."""
    for j in range(first, pairs + lag):
        if j < pairs:
            yield net(j)
        if j >= lag:
            yield proc(j - lag, lag)


class Publisher:
    """Raw NATS PUBs on one connection (JetStream stores them; no PubAck wait)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.recv(4096)
        self.s.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n')

    def send(self, msgs):
        self.s.sendall(b"".join(b"PUB %s %d\r\n%s\r\n" % (s.encode(), len(d), d) for s, d in msgs))

    def sync(self):
        self.s.sendall(b"PING\r\n")
        buf = b""
        while b"PONG" not in buf:
            buf += self.s.recv(4096)


class AlertClock:
    """A core NATS subscriber to the alerts: arrival time of each, by pair."""

    def __init__(self, port, subject):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.recv(4096)
        self.s.sendall(b'CONNECT {"verbose":false}\r\nSUB %s 1\r\nPING\r\n' % subject.encode())
        self.arrivals = []
        self.stop = False
        buf = b""
        while b"PONG" not in buf:
            buf += self.s.recv(4096)
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        buf = b""
        while not self.stop:
            try:
                c = self.s.recv(65536)
            except OSError:
                return
            if not c:
                return
            buf += c
            while True:
                nl = buf.find(b"\r\n")
                if nl < 0:
                    break
                line = buf[:nl]
                if line.startswith(b"MSG "):
                    n = int(line.split()[-1])
                    if len(buf) < nl + 2 + n + 2:
                        break
                    body = buf[nl + 2:nl + 2 + n]
                    buf = buf[nl + 2 + n + 2:]
                    ip = re.search(rb'"target_ip":"10\.(\d+)\.(\d+)\.(\d+)"', body)
                    if ip:
                        a, b, c2 = (int(x) for x in ip.groups())
                        self.arrivals.append((time.monotonic(), a << 16 | b << 8 | c2))
                elif line == b"PING":
                    self.s.sendall(b"PONG\r\n")
                    buf = buf[nl + 2:]
                else:
                    buf = buf[nl + 2:]


def oracle_check(url, rules):
    """(alerts stored, alerts expected, equal): the stored alerts against `gust vpl-run`
    over the stored input events in stream order, as multisets."""
    import collections
    stored = read_stream(url)
    got = collections.Counter(key(json.loads(d)) for _, s, d in stored if s == "ev.seq.alerts")
    want = vpl_run(rules, [d for _, s, d in stored if s.startswith("ev.seq.in.")])
    return sum(got.values()), sum(want.values()), got == want


def bus_floor(url, alerts, size, window):
    """The bus alone storing `alerts` messages of `size` bytes with PubAcks, from one
    connection with `window` PubAcks awaited at once, each with its own Nats-Msg-Id."""
    out = subprocess.run([os.path.join(TOOLS, "gust-bench-bus"), url, "jspub", str(size), str(alerts), "FLOOR",
                          str(window), "1"], check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    if not r["ok"]:
        raise AssertionError("the bus floor did not store every message: %s" % out)
    return {"messages": r["messages"], "size": r["size"], "window": r["window"], "ms": round(r["seconds"] * 1000),
            "rate": r["rate"]}


def detect(g):
    return next(u for u in json.loads(g.request("GET", "/units")[1])["units"] if u["name"] == "seq")["detect"]


CONF = """
log_level warn;
node_name %(node)s;
http { listen 127.0.0.1:@PORT@; }
nats { url %(url)s; lease_ttl %(ttl)s; lease_poll 100ms; }
detect seq { rules %(rules)s; checkpoint_interval %(interval)s; checkpoint_events 0; }
"""


def restore_replay(lag, replay, window):
    tmp = TempDir()
    nats = NatsServer(tmp)
    rules = program(tmp)
    pub = Publisher(nats.port)
    conf = CONF % {"node": "bench", "url": nats.url, "ttl": "6s", "rules": rules, "interval": "1s"}
    try:
        events = list(stream_of(3 * lag, lag))
        first = events[:lag + 1]  # LAG+1 NetworkConnects: the peak of open runs
        g = Gust(tmp, conf)  # it makes the stream
        for i in range(0, len(first), 5000):
            pub.send(first[i:i + 5000])
        pub.sync()
        last = len(first)
        wait_for(lambda: detect(g)["position"] >= last and detect(g)["checkpoint"]["seq"] >= last, 120,
                 "the peak applied and checkpointed")
        at_peak = detect(g)
        g.proc.kill()
        g.proc.wait()
        more = events[lag + 1:lag + 1 + replay]
        for i in range(0, len(more), 5000):
            pub.send(more[i:i + 5000])
        pub.sync()
        last_seq = len(first) + len(more)  # the stream holds only these so far: seq = count
        t0 = time.monotonic()
        g = Gust(tmp, conf, port=g.port)
        wait_for(lambda: detect(g)["position"] >= last_seq, 300, "the replay done")
        total = time.monotonic() - t0
        d = detect(g)
        time.sleep(0.5)
        got, want, ok = oracle_check(nats.url, rules)
        g.stop()
        row = {"open_runs": at_peak["open_runs"], "checkpoint_bytes": at_peak["checkpoint"]["bytes"],
               "checkpoint_write_ms": at_peak["checkpoint"]["write_ms"],
               "bytes_per_open_run": round(at_peak["checkpoint"]["bytes"] / max(1, at_peak["open_runs"]), 1),
               "replayed_events": len(more), "restore_ms": d["restore_ms"],
               "start_to_caught_up_ms": round(total * 1000),
               "replay_rate": round(len(more) / max(1e-9, total - d["restore_ms"] / 1000)) if more else None,
               "alerts": got, "alerts_expected": want, "ok": ok}
        if got > 0:
            sizes = [len(data) for _, s, data in read_stream(nats.url) if s == "ev.seq.alerts"]
            row["bus_floor"] = bus_floor(nats.url, got, round(sum(sizes) / len(sizes)), window)
            row["over_floor"] = round(total * 1000 / max(1, row["bus_floor"]["ms"]), 2)
        return row
    finally:
        nats.stop()
        tmp.cleanup()


def failover(ttl_s, rate):
    tmp = TempDir()
    nats = NatsServer(tmp)
    rules = program(tmp)
    tmps, nodes = [], {}
    lag = 100
    try:
        for n in ("n1", "n2", "n3"):
            t = TempDir()
            tmps.append(t)
            nodes[n] = Gust(t, CONF % {"node": n, "url": nats.url, "ttl": "%ds" % ttl_s, "rules": rules,
                                       "interval": "1s"})
        clock = AlertClock(nats.port, "ev.seq.alerts")
        pub = Publisher(nats.port)
        stop = threading.Event()
        sent = [0]

        def publish():
            gen = stream_of(10 ** 9, lag)
            t_next = time.monotonic()
            while not stop.is_set():
                batch = [next(gen) for _ in range(rate // 50)]
                pub.send(batch)
                sent[0] += len(batch)
                t_next += 0.02
                time.sleep(max(0, t_next - time.monotonic()))

        th = threading.Thread(target=publish, daemon=True)
        th.start()

        def holder():
            for n, g in nodes.items():
                if g.proc.poll() is None and detect(g)["owned"]:
                    return n, g
            return None, None

        def gap_after(t_event):
            """The longest silence between two alerts from just before t_event until the
            unit has been back for a while: the failover's gap."""
            time.sleep(ttl_s + 3)
            times = sorted(t for t, _ in clock.arrivals if t > t_event - 0.5)
            gaps = [b - a for a, b in zip(times, times[1:])]
            return round(max(gaps) * 1000) if gaps else None

        time.sleep(3)
        name, g = holder()
        t_kill = time.monotonic()
        g.proc.kill()
        g.proc.wait()
        gap_kill = gap_after(t_kill)
        name2, g2 = holder()
        t_term = time.monotonic()
        g2.stop(signal.SIGTERM)
        gap_term = gap_after(t_term)
        stop.set()
        th.join()
        pub.sync()
        live = [g for g in nodes.values() if g.proc.poll() is None]
        last = len(read_stream(nats.url))
        wait_for(lambda: any(detect(g)["owned"] and detect(g)["position"] >= last - 10 ** 4 for g in live), 60,
                 "the holder caught up")
        time.sleep(2)
        got, want, ok = oracle_check(nats.url, rules)
        for g in live:
            g.stop()
        return {"lease_ttl_ms": ttl_s * 1000, "events_per_s": rate, "killed": name,
                "gap_after_kill_ms": gap_kill, "target_after_kill_ms": ttl_s * 1000 + 1000, "stopped": name2,
                "gap_after_clean_stop_ms": gap_term, "target_after_clean_stop_ms": 1000,
                "alerts": got, "alerts_expected": want, "ok": ok}
    finally:
        for g in nodes.values():
            if g.proc.poll() is None:
                g.proc.kill()
        nats.stop()
        for t in tmps:
            t.cleanup()
        tmp.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lag", type=int, default=100000)
    ap.add_argument("--ttl", type=int, default=6, help="lease_ttl of the failover part, seconds")
    ap.add_argument("--rate", type=int, default=2000, help="events/s of the failover part")
    ap.add_argument("--replays", default="0,20000,100000")
    ap.add_argument("--floor-window", type=int, default=4096,
                    help="PubAcks awaited at once by the bus floor beside each replay")
    a = ap.parse_args()
    started = provenance.start()
    out = {"scenario": "detect-failover", "lag": a.lag,
           "restore_replay": [restore_replay(a.lag, int(r), a.floor_window) for r in a.replays.split(",")],
           "failover": failover(a.ttl, a.rate)}
    out["ok"] = all(r["ok"] for r in out["restore_replay"]) and out["failover"]["ok"]
    provenance.emit("detect-failover", out, BUILD, started, ok=out["ok"])
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
