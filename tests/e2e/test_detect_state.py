"""Detect state that survives: the alerts stored in the stream are exactly those
`gust vpl-run` prints for the unit's input events in stream order, each once
(detect_oracle.py), over a run with
  - kill -9 of gust at five random points, restarting each time;
  - SIGHUP every 300 ms with the rules unchanged (the unit keeps running), then once with
    a changed program (which starts empty after the position the old one stopped at:
    the oracle is then the old program up to there and the new one after);
  - nats-server restarted mid-run;
  - nats-server killed while the unit waits on a pull: its consumer is forgotten, silently;
  - gust frozen (SIGSTOP) for longer than ack_wait: no input is fed twice;
  - a corrupted and a truncated checkpoint: refused, the unit starts empty after the
    checkpoint's position, and what that costs is shown;
  - a restart behind a backlog: no checkpoint on time while it catches up, one as soon
    as it has."""
import json
import os
import random
import re
import signal
import socket
import threading
import time

from detect_oracle import PROGRAM, alerts_of, compare, detect_of, events, inputs_of, vpl_run, wait_applied
from gustlib import Checks, Gust, NatsServer, TempDir, js_api, nats_publish, wait_for

CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; ack_wait 1s; }
node_name detect-state-test;
detect o { rules %s; checkpoint_interval 200ms; }
"""


def setup(tmp, program=PROGRAM):
    nats = NatsServer(tmp)
    conf = CONF % (nats.url, program)
    return nats, conf, Gust(tmp, conf)


def last_input_seq(nats):
    return inputs_of(nats.read_stream())[-1][0]


def check_oracle(t, nats, what, expect_inputs):
    stored = nats.read_stream()
    inputs = inputs_of(stored)
    t.eq(len(inputs), expect_inputs, "%s: inputs stored" % what)
    compare(t, vpl_run(PROGRAM, [m[2] for m in inputs]), alerts_of(stored, "o"), what)
    return stored


def kill9(t):
    tmp = TempDir()
    nats, conf, g = setup(tmp)
    evs = events(20000, seed=11)
    r = random.Random(5)
    points = sorted(r.sample(range(1000, 19000), 5))
    published = 0
    for p in points + [len(evs)]:
        nats_publish(nats.port, evs[published:p])
        published = p
        if p == len(evs):
            break
        time.sleep(r.uniform(0.4, 1.5))  # mostly past a checkpoint (every 200 ms)
        g.proc.kill()
        g.proc.wait()
        g = Gust(tmp, conf, port=g.port)
    wait_applied([g], "o", last_input_seq(nats))
    check_oracle(t, nats, "kill -9 at five points", len(evs))
    takeovers = [l for l in g.log().splitlines() if "taken over" in l]
    t.check(sum("taken over: restored" in l for l in takeovers) >= 3,
            "restarts restored the unit from its checkpoints: %s" % takeovers)
    g.stop()
    nats.stop()
    tmp.cleanup()


def catch_up(t):
    """Restarted behind 15 000 events, the unit checkpoints (every 200 ms) only once it
    has caught up: its first checkpoint after the restart is at the last input."""
    tmp = TempDir()
    nats, conf, g = setup(tmp)
    evs = events(17000, seed=13)
    nats_publish(nats.port, evs[:2000])
    wait_applied([g], "o", last_input_seq(nats))
    wait_for(lambda: detect_of(g, "o")["checkpoint"]["seq"] >= last_input_seq(nats), 30, "a checkpoint")
    g.proc.kill()
    g.proc.wait()
    nats_publish(nats.port, evs[2000:])
    last = last_input_seq(nats)
    g = Gust(tmp, conf, port=g.port)
    wait_applied([g], "o", last)
    wait_for(lambda: detect_of(g, "o")["checkpoint"]["count"] >= 1, 30, "a checkpoint after the restart")
    time.sleep(0.5)
    cp = detect_of(g, "o")["checkpoint"]
    t.eq((cp["count"], cp["seq"]), (1, last), "checkpoints after the restart (count, seq)")
    check_oracle(t, nats, "restart behind a backlog", len(evs))
    g.stop()
    nats.stop()
    tmp.cleanup()


def reload_unchanged_then_changed(t):
    tmp = TempDir()
    nats, conf, g = setup(tmp)
    evs = events(20000, seed=12)
    done = threading.Event()

    def publish():
        for i in range(0, len(evs), 500):
            nats_publish(nats.port, evs[i:i + 500])
            time.sleep(0.02)
        done.set()

    th = threading.Thread(target=publish)
    th.start()
    hups = 0
    while not done.is_set() or hups < 10:
        time.sleep(0.3)
        g.proc.send_signal(signal.SIGHUP)
        hups += 1
    th.join()
    wait_applied([g], "o", last_input_seq(nats))
    check_oracle(t, nats, "SIGHUP every 300 ms (%d), rules unchanged" % hups, len(evs))
    t.check(g.log().count("unchanged: kept running") >= hups // 2, "the unit was kept running through reloads")
    t.eq(detect_of(g, "o")["restores"], 1, "no restore after the first start: the state was never dropped")

    # A changed program starts empty, after where the old one stopped.
    changed = tmp.file("changed.vpl", open(PROGRAM).read().replace(".within(30s)", ".within(45s)"))
    tmp.file("host.conf", conf.replace(PROGRAM, changed).replace("@PORT@", str(g.port)))
    g.proc.send_signal(signal.SIGHUP)
    try:
        line = wait_for(lambda: re.search(r"another program or slicing, reading after seq (\d+)", g.log()), 20,
                        "the changed program taking over")
    except AssertionError:
        print("\n".join(l for l in g.log().splitlines() if "checkpoint at seq" not in l)[-6000:])
        raise
    cut = int(line.group(1))
    more = events(3000, seed=13, first_id=len(evs))
    nats_publish(nats.port, more)
    wait_applied([g], "o", last_input_seq(nats))
    stored = nats.read_stream()
    inputs = inputs_of(stored)
    t.eq(len(inputs), len(evs) + len(more), "changed program: inputs stored")
    want = vpl_run(PROGRAM, [m[2] for m in inputs if m[0] <= cut]) + \
        vpl_run(changed, [m[2] for m in inputs if m[0] > cut])
    compare(t, want, alerts_of(stored, "o"), "changed program: the old one up to seq %d, the new one after" % cut)
    g.stop()
    nats.stop()
    tmp.cleanup()


def nats_restart(t):
    tmp = TempDir()
    nats, conf, g = setup(tmp)
    evs = events(10000, seed=14)
    nats_publish(nats.port, evs[:6000])
    time.sleep(0.3)
    nats.stop()
    time.sleep(1.0)
    nats.start()
    nats_publish(nats.port, evs[6000:])
    wait_applied([g], "o", last_input_seq(nats), timeout=180)
    check_oracle(t, nats, "nats-server restarted mid-run", len(evs))
    g.stop()
    nats.stop()
    tmp.cleanup()


def nats_killed(t):
    """nats-server killed (-9) while the unit waits on a pull, then started again: no
    409 "Server Shutdown" ends the request, the server has forgotten the unit's consumer
    (ephemeral, in memory), and pull requests to it go unanswered (not refused:
    JetStream's API takes every $JS.API subject). The unit must notice and read on from
    its position."""
    tmp = TempDir()
    nats, conf, g = setup(tmp)
    evs = events(6000, seed=17)
    nats_publish(nats.port, evs[:3000])
    wait_applied([g], "o", last_input_seq(nats))
    nats.kill()
    nats.start()
    nats_publish(nats.port, evs[3000:])
    wait_applied([g], "o", last_input_seq(nats), timeout=60)
    check_oracle(t, nats, "nats-server killed while the unit waited", len(evs))
    t.check("the consumer is gone" in g.log(), "the lost consumer was noticed and named in the log")
    g.stop()
    nats.stop()
    tmp.cleanup()


def frozen(t):
    """SIGSTOP for longer than ack_wait (1 s) while batches are in flight: with a durable
    consumer they would be redelivered and fed again."""
    tmp = TempDir()
    nats, conf, g = setup(tmp)
    evs = events(10000, seed=15)
    nats_publish(nats.port, evs[:5000])
    time.sleep(0.05)
    g.proc.send_signal(signal.SIGSTOP)
    time.sleep(2.5)
    g.proc.send_signal(signal.SIGCONT)
    nats_publish(nats.port, evs[5000:])
    wait_applied([g], "o", last_input_seq(nats))
    check_oracle(t, nats, "frozen past ack_wait", len(evs))
    t.eq(detect_of(g, "o")["events"], len(evs), "each input fed once")
    g.stop()
    nats.stop()
    tmp.cleanup()


def hpub(port, subject, data, headers):
    """A raw NATS HPUB (with headers), then a PING: the server has it when PONG comes."""
    hdr = b"NATS/1.0\r\n" + b"".join(b"%s: %s\r\n" % (k.encode(), v.encode()) for k, v in headers) + b"\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.recv(4096)
        s.sendall(b'CONNECT {"verbose":false,"headers":true}\r\nHPUB %s %d %d\r\n%s%s\r\nPING\r\n' % (
            subject.encode(), len(hdr), len(hdr) + len(data), hdr, data))
        buf = b""
        while b"PONG" not in buf:
            buf += s.recv(4096)


def fnv1a(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def corrupted(t, how):
    tmp = TempDir()
    nats, conf, g = setup(tmp)
    evs = events(6000, seed=16)
    nats_publish(nats.port, evs[:3000])
    wait_applied([g], "o", last_input_seq(nats))
    t.eq(g.stop(), 0, "%s: clean stop (a final checkpoint)" % how)

    # Replace the checkpoint by a damaged copy whose head is right about it, so that the
    # store reads it back whole and the engine's own check must refuse it.
    state = nats.read_stream("GUST_STATE")
    head = json.loads([m for m in state if m[1] == "gust.state.o.0.head"][-1][2])
    chunks = {m[0]: m[2] for m in state}
    blob = b"".join(chunks[s] for s in head["chunks"])
    bad = bytearray(blob)
    if how == "flipped":
        for i in range(40, len(bad) - 20, max(1, len(bad) // 7)):
            bad[i] ^= 0x5A
    else:
        bad = bad[:len(bad) * 2 // 3]
    bad = bytes(bad)
    nats_publish(nats.port, [("gust.state.o.0.data", bad)])
    seq = max(m[0] for m in nats.read_stream("GUST_STATE"))
    head.update(bytes=len(bad), hash=fnv1a(bad), chunks=[seq])
    hpub(nats.port, "gust.state.o.0.head", json.dumps(head).encode(), [("Nats-Rollup", "sub")])

    g = Gust(tmp, conf, port=g.port)
    cut = head["info"]["position"]
    wait_for(lambda: "checkpoint refused" in g.log(), 10, "the damaged checkpoint refused")
    t.check("starting empty after %d" % cut in g.log(), "%s: starts empty after the checkpoint's position" % how)
    nats_publish(nats.port, evs[3000:])
    wait_applied([g], "o", last_input_seq(nats))
    stored = nats.read_stream()
    inputs = inputs_of(stored)
    before = [m[2] for m in inputs if m[0] <= cut]
    after = [m[2] for m in inputs if m[0] > cut]
    want = vpl_run(PROGRAM, before) + vpl_run(PROGRAM, after)
    compare(t, want, alerts_of(stored, "o"), "%s checkpoint: up to seq %d, then empty" % (how, cut))
    whole = vpl_run(PROGRAM, before + after)
    print("%s checkpoint: %d alerts of an uninterrupted run lost, %d made that it would not have" % (
        how, sum((whole - want).values()), sum((want - whole).values())))
    g.stop()
    nats.stop()
    tmp.cleanup()


def main():
    t = Checks()
    which = os.environ.get("DETECT_STATE_ONLY")
    for name, fn in [("kill9", kill9), ("catch_up", catch_up), ("reload", reload_unchanged_then_changed),
                     ("nats", nats_restart),
                     ("nats_killed", nats_killed),
                     ("frozen", frozen), ("flipped", lambda t: corrupted(t, "flipped")),
                     ("truncated", lambda t: corrupted(t, "truncated"))]:
        if which in (None, "", name):
            print("== %s" % name, flush=True)
            fn(t)
    t.done()


if __name__ == "__main__":
    main()
