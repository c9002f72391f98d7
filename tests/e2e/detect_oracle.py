"""The oracle of the detect-state tests: what `gust vpl-run PROGRAM` prints for the
unit's input events in stream order is what the stream must hold, each alert once,
whatever happened to the processes in between. Alerts compare as multisets of alert
objects without their "timestamp"."""
import collections
import json
import os
import random
import subprocess
import tempfile

from gustlib import GUST, SOURCE_DIR, wait_for

PROGRAM = os.path.join(SOURCE_DIR, "tests", "e2e", "data", "oracle.vpl")
INPUTS = {"A": "ev.o.a", "B": "ev.o.b", "Login": "ev.o.login", "Logout": "ev.o.logout", "M": "ev.o.m"}


def events(n, seed=1, first_id=0):
    """n input events [(subject, bytes)]: event time 100 ms apart (one M in five up to
    3 s late), hosts and users drawn at random, so that sequences, absences, windows and
    late bins all open and close."""
    r = random.Random(seed)
    out = []
    for i in range(first_id, first_id + n):
        t = i * 100
        k = r.random()
        if k < 0.25:
            e = {"event_type": "A", "id": i, "host": "h%d" % r.randrange(40), "ts": t}
        elif k < 0.5:
            e = {"event_type": "B", "id": i, "host": "h%d" % r.randrange(40), "ts": t}
        elif k < 0.62:
            e = {"event_type": "Login", "id": i, "user": "u%d" % r.randrange(25), "ts": t}
        elif k < 0.72:
            e = {"event_type": "Logout", "id": i, "user": "u%d" % r.randrange(25), "ts": t}
        else:
            late = r.randrange(3000) if r.random() < 0.2 else 0
            e = {"event_type": "M", "id": i, "host": "h%d" % r.randrange(10), "v": r.randrange(100),
                 "ts": max(0, t - late)}
        out.append((INPUTS[e["event_type"]], json.dumps(e).encode()))
    return out


def key(alert):
    a = dict(alert)
    a.pop("timestamp", None)
    return json.dumps(a, sort_keys=True)


def vpl_run(program, payloads):
    """The alerts (multiset of keys) `gust vpl-run` prints for payloads in order."""
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as f:
        for p in payloads:
            f.write(p + b"\n")
        path = f.name
    try:
        out = subprocess.run([GUST, "vpl-run", program, path], capture_output=True, check=True)
    finally:
        os.unlink(path)
    return collections.Counter(key(json.loads(line)) for line in out.stdout.splitlines() if line.strip())


def inputs_of(stored):
    """The input messages of a stream read back: [(seq, subject, bytes)] in stream order."""
    return [m for m in stored if m[1].startswith("ev.o.")]


def alerts_of(stored, unit):
    return collections.Counter(key(json.loads(m[2])) for m in stored if m[1].startswith("ev.detect.%s." % unit))


def detect_of(g, unit):
    units = json.loads(g.request("GET", "/units")[1])["units"]
    return next(u for u in units if u["name"] == unit)["detect"]


def wait_applied(gusts, unit, last_seq, timeout=120):
    """Until the slices held by the processes together have applied every input up to
    last_seq (each slice is held by one process; a process holding none says 0)."""
    def done():
        held = [detect_of(g, unit) for g in gusts if g.proc.poll() is None]
        owned = sum(len(d["owned"]) for d in held)
        return owned > 0 and all(d["position"] >= last_seq for d in held if d["owned"])
    wait_for(done, timeout, "every input applied (seq %d)" % last_seq)


def compare(t, want, got, what):
    """Missing and extra alerts are both failures, named."""
    missing = want - got
    extra = got - want
    t.check(not missing and not extra,
            "%s: %d alerts expected, %d stored; missing %d %s; extra %d %s" % (
                what, sum(want.values()), sum(got.values()), sum(missing.values()),
                list(missing.elements())[:3], sum(extra.values()), list(extra.elements())[:3]))
