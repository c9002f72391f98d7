"""timer() streams and .allowed_lateness() under kill -9 (data/timer.vpl). Without
idle_tick, the unit stores timer records on its input and its timer fires every 300 ms;
gust is killed -9 at three points while readings (some late) come in, and restarted.
Then: the timer's events are every 300 ms, each once, none missing (a restart fires
what it missed, a record stored twice fires nothing twice), and the alerts stored are
exactly what `gust vpl-run` prints for the stored input, timer records included, up to
the last record the unit applied before it stopped (detect_oracle.py). In a cluster of
two with `slices 2`, only the holder of slice 0 stores timer records, and the timer goes
on, each instant once, when the other takes slice 0 over."""
import collections
import json
import os
import random
import time

from detect_oracle import compare, key, vpl_run, wait_applied
from gustlib import SOURCE_DIR, Checks, Gust, NatsServer, TempDir, nats_publish, wait_for

PROGRAM = os.path.join(SOURCE_DIR, "tests", "e2e", "data", "timer.vpl")
CLUSTER = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; lease_ttl 1500ms; lease_poll 100ms; }
node_name %s;
detect tm { rules %s; slices 2; checkpoint_interval 200ms; }
"""
CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; ack_wait 1s; }
node_name detect-timer-test;
detect tm { rules %s; checkpoint_interval 200ms; }
"""


def readings(n, seed):
    """n readings 100 ms apart in event time; one in eight is 0.5 to 2.8 s late, so some
    reach a closed bin within its lateness and some come too late."""
    r = random.Random(seed)
    out = []
    for i in range(n):
        t = 10000 + i * 100
        if r.random() < 0.125:
            t -= r.randrange(500, 2800)
        e = {"event_type": "Reading", "id": i, "sensor": "s%d" % r.randrange(4), "ts": t}
        out.append(("ev.tr", json.dumps(e).encode()))
    return out


def alerts(stored, stream=None):
    """The alerts of one stream, or of all."""
    return [json.loads(m[2]) for m in stored
            if (m[1] == "ev.detect.tm." + stream if stream else m[1].startswith("ev.detect.tm."))]


def owned(g):
    units = json.loads(g.request("GET", "/units")[1])["units"]
    return next(u for u in units if u["name"] == "tm")["detect"]["owned"]


def records(stored):
    return [m for m in stored if m[1] == "ev.tr" and m[2].startswith(b'{"@timer":')]


def wasted(recs):
    """The timer records after the first (which starts the timer) that fire nothing: one
    publisher stores a record only once an instant is due and its last record has been
    applied, so only a second publisher's record can come too early (100 ms delay, 300 ms
    period: data/timer.vpl)."""
    times = [json.loads(m[2])["@timer"] for m in recs]
    due, n = times[0] + 100, 0
    for at in times[1:]:
        n += due > at
        while due <= at:
            due += 300
    return n


def cluster(t):
    """Two processes, slices 2: only the holder of slice 0 stores timer records (none
    fires nothing), and when it is killed the other takes slice 0 over and the timer goes
    on from where it was, each instant once."""
    tmp = TempDir()
    nats = NatsServer(tmp)
    gusts = []
    for name in ("a", "b"):
        sub = TempDir()
        gusts.append((Gust(sub, CLUSTER % (nats.url, "tm-" + name, PROGRAM)), sub))
    wait_for(lambda: sorted(k for g, _ in gusts for k in owned(g)) == [0, 1], 30, "slices 0 and 1 held")
    g0 = next(g for g, _ in gusts if 0 in owned(g))
    g1 = next(g for g, _ in gusts if g is not g0)
    wait_for(lambda: len(alerts(nats.read_stream(), "Beat")) >= 3, 15, "the cluster's timer events")
    time.sleep(3)
    recs = records(nats.read_stream())
    t.check(len(recs) >= 5 and wasted(recs) == 0,
            "one process stores timer records: %d records, %d of them too early" % (len(recs), wasted(recs)))
    g0.proc.kill()
    g0.proc.wait()
    wait_for(lambda: sorted(owned(g1)) == [0, 1], 15, "the survivor holds both slices")
    last = len(alerts(nats.read_stream(), "Beat"))
    wait_for(lambda: len(alerts(nats.read_stream(), "Beat")) >= last + 5, 15, "the timer goes on in the survivor")
    beats = [a["at"] for a in alerts(nats.read_stream(), "Beat")]
    steps = collections.Counter(b - a for a, b in zip(beats, beats[1:]))
    t.check(set(steps) == {300}, "cluster: every 300 ms, each once, across the take-over: %s" % dict(steps))
    for g, sub in gusts:
        if g.proc.poll() is None:
            g.stop()
        sub.cleanup()
    nats.stop()
    tmp.cleanup()


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    conf = CONF % (nats.url, PROGRAM)
    g = Gust(tmp, conf)
    wait_for(lambda: len(alerts(nats.read_stream(), "Beat")) >= 3, 15, "the timer's first events")

    evs = readings(600, seed=3)
    r = random.Random(7)
    published = 0
    for p in sorted(r.sample(range(50, 550), 3)) + [len(evs)]:
        nats_publish(nats.port, evs[published:p])
        published = p
        if p == len(evs):
            break
        time.sleep(r.uniform(0.5, 1.5))
        g.proc.kill()
        g.proc.wait()
        time.sleep(r.uniform(0.2, 1.5))  # the timer is due meanwhile: the restart fires it
        g = Gust(tmp, conf, port=g.port)
    last = [m[0] for m in nats.read_stream() if m[1] == "ev.tr"][-1]
    wait_applied([g], "tm", last)
    time.sleep(1)
    g.stop()
    g.proc.wait()

    stored = nats.read_stream()
    beats = [a["at"] for a in alerts(stored, "Beat")]
    steps = collections.Counter(b - a for a, b in zip(beats, beats[1:]))
    t.check(len(beats) >= 20 and set(steps) == {300},
            "the timer fired every 300 ms, each once, none missing: %d events, steps %s" % (len(beats), dict(steps)))
    t.check(len(alerts(stored, "Bins")) > 0, "the bins emitted")

    # The oracle: vpl-run over the stored input up to the last record applied. Records
    # stored after it (the unit stopped first) are trimmed from the end, never events.
    inputs = [m[2] for m in stored if m[1] == "ev.tr"]
    got = collections.Counter(key(a) for a in alerts(stored))
    cut = len(inputs)
    want = vpl_run(PROGRAM, inputs)
    while want != got and cut > 0 and inputs[cut - 1].startswith(b'{"@timer":'):
        cut -= 1
        want = vpl_run(PROGRAM, inputs[:cut])
    compare(t, want, got, "stored alerts == vpl-run over the stored input (%d of %d lines)" % (cut, len(inputs)))
    t.check(any(i.startswith(b'{"@timer":') for i in inputs), "timer records are stored on the input")
    nats.stop()
    tmp.cleanup()
    cluster(t)
    t.done()


if __name__ == "__main__":
    main()
