"""Detection that fires on silence: `idle_tick 1s` with a 3 s absence. One reading, then
nothing: the alert is stored within 6.5 s of the reading (without idle_tick it never
is); kill -9 and a restart store it no second time; the alerts stored equal what
`gust vpl-run` prints for the input as stored, its ticks included (detect_oracle.py).
A flow reading the same subject never sees the unit's ticks. In a cluster of two with
`slices 2`, only the holder of slice 0 ticks (one tick a second, not two), and when it is
killed the other takes slice 0 over and ticks on: the alerts of both slices come, and the
oracle holds."""
import collections
import json
import os
import time

from detect_oracle import compare, key, vpl_run
from gustlib import ADMIN_TOKEN_CONF, SOURCE_DIR, Checks, Gust, NatsServer, TempDir, wait_for

PROGRAM = os.path.join(SOURCE_DIR, "tests", "e2e", "data", "idle.vpl")
CLUSTER = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; lease_ttl 1500ms; lease_poll 100ms; }
node_name %s;
detect idle { rules %s; slices 2; idle_tick 1s; checkpoint_interval 200ms; }
"""
CONF = """
http { listen 127.0.0.1:@PORT@; %s }
nats { url %s; ack_wait 1s; }
node_name %s;
detect idle { rules %s; checkpoint_interval 200ms; %s }
flow seen { source ev.reading; script %s; }
"""
FLOW = """
return { on_event = function(ev) emit("ev.seen", ev) end }
"""


def reading(sensor):
    """A reading with its own event time, as the oracle needs (vpl-run has no arrival
    time of the bus's)."""
    return json.dumps({"event_type": "Reading", "sensor": sensor, "ts": int(time.time() * 1000)}).encode()


def alerts(stored):
    return [m for m in stored if m[1] == "ev.detect.idle.Quiet"]


def inputs(stored):
    return [m for m in stored if m[1] == "ev.reading"]


def oracle(t, nats, what):
    stored = nats.read_stream()
    compare(t, vpl_run(PROGRAM, [m[2] for m in inputs(stored)]),
            collections.Counter(key(json.loads(m[2])) for m in alerts(stored)), what)


def owned(g):
    units = json.loads(g.request("GET", "/units")[1])["units"]
    return next(u for u in units if u["name"] == "idle")["detect"]["owned"]


def cluster(t):
    tmp = TempDir()
    nats = NatsServer(tmp)
    gusts = {}
    for name in ("a", "b"):
        sub = TempDir()
        gusts[name] = (Gust(sub, CLUSTER % (nats.url, "idle-" + name, PROGRAM)), sub)
    wait_for(lambda: sorted(k for g, _ in gusts.values() for k in owned(g)) == [0, 1], 30, "slices 0 and 1 held")
    g0 = next(g for g, _ in gusts.values() if 0 in owned(g))
    g1 = next(g for g, _ in gusts.values() if g is not g0)
    sensors = ["s%d" % i for i in range(8)]
    for s in sensors:
        g1.request("POST", "/ingest/reading", reading(s))
    wait_for(lambda: len(alerts(nats.read_stream())) >= len(sensors), 20, "the alerts of both slices")
    before = len([m for m in inputs(nats.read_stream()) if m[2].startswith(b'{"@tick":')])
    time.sleep(4)
    ticks = len([m for m in inputs(nats.read_stream()) if m[2].startswith(b'{"@tick":')]) - before
    t.check(2 <= ticks <= 5, "one process ticks, once a second: %d ticks in 4 s" % ticks)

    # The holder of slice 0 dies: the other takes it over and ticks on.
    g0.proc.kill()
    g0.proc.wait()
    for s in ("late1", "late2"):
        g1.request("POST", "/ingest/reading", reading(s))
    wait_for(lambda: len(alerts(nats.read_stream())) >= len(sensors) + 2, 20,
             "the alerts after the holder of slice 0 was killed")
    wait_for(lambda: sorted(owned(g1)) == [0, 1], 10, "the survivor holds both slices")
    time.sleep(1.5)
    oracle(t, nats, "cluster: stored alerts == vpl-run over the stored input, ticks included")
    for g, sub in gusts.values():
        if g.proc.poll() is None:
            g.stop()
        sub.cleanup()
    nats.stop()
    tmp.cleanup()


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    flow = os.path.join(tmp.path, "seen.lua")
    with open(flow, "w") as f:
        f.write(FLOW)
    conf = CONF % (ADMIN_TOKEN_CONF, nats.url, "idle-a", PROGRAM, "idle_tick 1s;", flow)
    g = Gust(tmp, conf)

    # Without a later event, only the ticks can fire the absence.
    st, body, _ = g.request("POST", "/ingest/reading", reading("s1"))
    t.eq(st, 202, "reading accepted: %s" % body)
    sent = time.monotonic()
    wait_for(lambda: alerts(nats.read_stream()), 15, "the silence alert")
    took = time.monotonic() - sent
    t.check(took < 6.5, "the alert was stored %.1f s after the reading (3 s absence, 1 s tick: < 6.5 s)" % took)
    t.eq([json.loads(m[2])["sensor"] for m in alerts(nats.read_stream())], ["s1"], "one alert, for s1")

    # The flow on the same subject saw the reading, never a tick.
    wait_for(lambda: [m for m in nats.read_stream() if m[1] == "ev.seen"], 10, "the flow's emit")
    time.sleep(2.5)  # more ticks stored meanwhile
    stored = nats.read_stream()
    ticks = [m for m in inputs(stored) if m[2].startswith(b'{"@tick":')]
    t.check(len(ticks) >= 3, "ticks are stored on the input subject: %d" % len(ticks))
    seen = [json.loads(m[2]) for m in stored if m[1] == "ev.seen"]
    t.eq([e.get("sensor") for e in seen], ["s1"], "the flow saw the reading only, no tick: %s" % seen)

    # A shadow replay of the flow reads the subject's stored events, not the ticks.
    st, data, _ = g.request("POST", "/replay", json.dumps({"unit": "seen", "script": FLOW}).encode(),
                            {"Content-Type": "application/json"}, timeout=60)
    summary = json.loads(data)
    t.eq((st, summary.get("summary", {}).get("inputs")), (200, 1), "a replay of the flow has the one reading as input: %s" % summary)

    # kill -9 and a restart: the ticks are replayed where they were stored, once.
    g.proc.kill()
    g.proc.wait()
    g = Gust(tmp, conf, port=g.port)
    time.sleep(3)
    stored = nats.read_stream()
    t.eq(len(alerts(stored)), 1, "still exactly one alert after kill -9 and a restart")

    # A second reading of s2 then one of s1 in time: the oracle over what is stored.
    for s in ("s2", "s1"):
        g.request("POST", "/ingest/reading", reading(s))
        time.sleep(0.3)
    wait_for(lambda: len(alerts(nats.read_stream())) >= 3, 15, "the alerts of s2 and s1")
    time.sleep(1.5)
    oracle(t, nats, "stored alerts == vpl-run over the stored input, ticks included")

    g.stop()
    g.proc.wait()
    nats.stop()
    tmp.cleanup()
    cluster(t)
    t.done()


if __name__ == "__main__":
    main()
