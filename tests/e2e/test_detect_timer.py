"""timer() streams and .allowed_lateness() under kill -9 (data/timer.vpl). Without
idle_tick, the unit stores timer records on its input and its timer fires every 300 ms;
gust is killed -9 at three points while readings (some late) come in, and restarted.
Then: the timer's events are every 300 ms, each once, none missing (a restart fires
what it missed, a record stored twice fires nothing twice), and the alerts stored are
exactly what `gust vpl-run` prints for the stored input, timer records included, up to
the last record the unit applied before it stopped (detect_oracle.py)."""
import collections
import json
import os
import random
import time

from detect_oracle import compare, key, vpl_run, wait_applied
from gustlib import SOURCE_DIR, Checks, Gust, NatsServer, TempDir, nats_publish, wait_for

PROGRAM = os.path.join(SOURCE_DIR, "tests", "e2e", "data", "timer.vpl")
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
    t.done()


if __name__ == "__main__":
    main()
