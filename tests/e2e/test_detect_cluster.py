"""Detect state in a cluster: one detect unit with `slices 8` run by two, then three gust
processes on one NATS. Each slice is held by one process at a time (a lease), the slices
are spread evenly over the processes (4 + 4, then 3 + 3 + 2), and the alerts stored are exactly `gust vpl-run`'s for the input events in stream order, each
once (detect_oracle.py), while
  - of two processes, one is killed with -9 mid-run (the other takes its slices over
    once their leases expire, from their checkpoints);
  - of three, one is stopped with SIGTERM (a handoff: its final checkpoints, its leases
    given back) and later another is killed with -9."""
import signal
import time

from detect_oracle import PROGRAM, alerts_of, compare, detect_of, events, inputs_of, vpl_run, wait_applied
from gustlib import Checks, Gust, NatsServer, TempDir, nats_publish, wait_for

CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; lease_ttl 1500ms; lease_poll 100ms; }
node_name %s;
detect o { rules %s; slices 8; checkpoint_interval 200ms; }
"""


def start(tmp, nats, name):
    sub = type(tmp)()  # its own dir: its own host.conf and log
    return Gust(sub, CONF % (nats.url, name, PROGRAM)), sub


def owned(gusts):
    return sorted(k for g in gusts if g.proc.poll() is None for k in detect_of(g, "o")["owned"])


def spread(gusts):
    counts = [len(detect_of(g, "o")["owned"]) for g in gusts if g.proc.poll() is None]
    return owned(gusts) == list(range(8)) and max(counts) - min(counts) <= 1


def all_held(gusts):
    """Every slice held once, and the live processes holding as many each, give or take
    one (the leases of a group are spread over the processes attached to it)."""
    return wait_for(lambda: spread(gusts), 30, "the 8 slices held once each, spread evenly")


def run(t, names, script, what):
    tmp = TempDir()
    nats = NatsServer(tmp)
    nodes = {}
    dirs = []
    for n in names:
        nodes[n], d = start(tmp, nats, n)
        dirs.append(d)
    live = lambda: [g for g in nodes.values() if g.proc.poll() is None]
    all_held(live())
    evs = events(12000, seed=21)
    chunk = len(evs) // (len(script) + 1)
    for i, action in enumerate(script):
        nats_publish(nats.port, evs[i * chunk:(i + 1) * chunk])
        time.sleep(0.5)
        # The process holding the most slices.
        name, g = max(((n, g) for n, g in nodes.items() if g.proc.poll() is None),
                      key=lambda ng: len(detect_of(ng[1], "o")["owned"]))
        if action == "kill":
            g.proc.kill()
            g.proc.wait()
        else:
            t.eq(g.stop(signal.SIGTERM), 0, "%s: %s stops cleanly" % (what, name))
        all_held(live())
    nats_publish(nats.port, evs[len(script) * chunk:])
    last = inputs_of(nats.read_stream())[-1][0]
    wait_applied(live(), "o", last)
    stored = nats.read_stream()
    inputs = inputs_of(stored)
    t.eq(len(inputs), len(evs), "%s: inputs stored" % what)
    compare(t, vpl_run(PROGRAM, [m[2] for m in inputs]), alerts_of(stored, "o"), what)
    t.check(spread(live()), "%s: every slice held by exactly one live process, evenly" % what)
    for g in live():
        g.stop()
    nats.stop()
    for d in dirs:
        d.cleanup()
    tmp.cleanup()


def main():
    t = Checks()
    # Two processes, four slices each; one is killed.
    run(t, ["n1", "n2"], ["kill"], "two processes, one killed")
    # Three: the holder hands over cleanly, then the next holder is killed.
    run(t, ["n1", "n2", "n3"], ["term", "kill"], "three processes, a handoff then a kill")
    t.done()


if __name__ == "__main__":
    main()
