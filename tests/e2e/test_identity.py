"""One identity per process (issue 24, item 7): two gust processes started with the
same node_name on one NATS (without `cluster on;`) do not both hold a lease: a 500 ms
singleton timer ticks about 24 times in 12 s, not 48. A node_name (or a stream or bucket
name) that NATS would need renamed is refused at config time with file:line, not renamed. With `cluster on;` the
second process logs who else runs with its name (host and pid)."""
import json
import os
import socket
import subprocess
import time

from gustlib import BUILD, GUST, Checks, Gust, NatsServer, TempDir, kill_all, wait_for

PLUGINS = os.path.join(BUILD, "plugins")

CONF = """
plugin_dir %(plugins)s;
plugin timer;
node_name twin;
http { listen 127.0.0.1:@PORT@; }
nats { url %(url)s; lease_ttl 3s; lease_poll 200ms; }
source tick { use timer; interval 500ms; subject ev.tick; }
"""


def ticks(nats):
    return len([m for m in nats.read_stream() if m[1] == "ev.tick"])


def lease(g):
    status, body, _ = g.request("GET", "/units")
    assert status == 200, body
    return [x for x in json.loads(body)["cluster"]["leases"] if x["name"] == "tick"][0]


def twins(t):
    tmp = TempDir()
    nats = NatsServer(tmp)
    procs = []
    try:
        conf = CONF % {"plugins": PLUGINS, "url": nats.url}
        a = Gust(TempDir(), conf)
        procs.append(a)
        wait_for(lambda: ticks(nats) >= 1, 10, "the first process ticks")
        b = Gust(TempDir(), conf)
        procs.append(b)
        time.sleep(1)
        first = ticks(nats)
        time.sleep(12)
        n = ticks(nats) - first
        print("ticks in 12 s with two processes named twin: %d" % n)
        t.check(18 <= n <= 30, "a 500 ms singleton timer ticks about 24 times in 12 s, not 48: %d" % n)
        held = [lease(g)["held"] for g in procs]
        t.eq(sorted(held), [False, True], "exactly one of the two holds the lease")

        # The holder is killed -9: the twin takes over (at once: the holder's pid is
        # free on this machine), and the timer ticks on once.
        holder = procs[held.index(True)]
        other = procs[held.index(False)]
        holder.proc.kill()
        holder.proc.wait(10)
        wait_for(lambda: lease(other)["held"], 15, "the survivor takes the lease")
        first = ticks(nats)
        time.sleep(4)
        n = ticks(nats) - first
        t.check(5 <= n <= 11, "the survivor alone ticks about 8 times in 4 s: %d" % n)
        failed = False
    except Exception:
        failed = True
        raise
    finally:
        kill_all(procs, nats, failed=t.failed > 0 or failed)


def twins_in_cluster(t):
    """With `cluster on;` the second process says who else runs with its node_name."""
    tmp = TempDir()
    nats = NatsServer(tmp)
    procs = []
    try:
        conf = "cluster on;\n" + CONF % {"plugins": PLUGINS, "url": nats.url}
        a = Gust(TempDir(), conf)
        procs.append(a)
        b = Gust(TempDir(), conf)
        procs.append(b)
        want = "another process runs with node_name twin (host %s, pid %d)" % (socket.gethostname(), a.proc.pid)
        t.check(want in b.log(), "the second process names the first's host and pid: %s" % want)
        first = ticks(nats)
        time.sleep(6)
        n = ticks(nats) - first
        t.check(8 <= n <= 16, "with cluster on, the timer ticks about 12 times in 6 s: %d" % n)
    finally:
        kill_all(procs, nats, failed=t.failed > 0)


def restart_after_kill(t):
    """A process restarted after kill -9 (same node_name, same machine) takes the lease
    back at once, though its predecessor's entry would last 60 s: that process is gone
    for sure (its pid is free in this kernel and pid namespace)."""
    tmp = TempDir()
    nats = NatsServer(tmp)
    procs = []
    try:
        conf = (CONF % {"plugins": PLUGINS, "url": nats.url}).replace("lease_ttl 3s", "lease_ttl 60s")
        a = Gust(TempDir(), conf)
        procs.append(a)
        wait_for(lambda: ticks(nats) >= 1, 10, "the first process ticks")
        a.proc.kill()
        a.proc.wait(10)
        start = time.monotonic()
        b = Gust(TempDir(), conf)
        procs.append(b)
        wait_for(lambda: lease(b)["held"], 20, "the restarted process takes the lease back")
        took = time.monotonic() - start
        t.check(took < 15, "taken back in %.1f s, not after the 60 s TTL" % took)
        t.check("is gone: taken over before its TTL" in b.log(), "the log says why")
    finally:
        kill_all(procs, nats, failed=t.failed > 0)


def gust_t(text):
    tmp = TempDir()
    path = tmp.file("host.conf", text)
    p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True)
    return path, p.returncode, p.stdout + p.stderr


def names(t):
    for name, line in [('"a\\"b"', 1), ("a:b", 1), ("'a b'", 1), ("a.b", 1), ("x" * 65, 1)]:
        path, rc, out = gust_t("node_name %s;\nhttp { listen 127.0.0.1:1; }\n" % name)
        t.eq(rc, 1, "node_name %s refused" % name)
        t.check("%s:%d:" % (path, line) in out and "node_name" in out,
                "node_name %s: the error names file:line: %s" % (name, out.strip()))
    for key, name in [("stream", "ev.x"), ("lease_bucket", "'a b'"), ("state_bucket", "a>b"), ("dlq_stream", "a*")]:
        path, rc, out = gust_t("http { listen 127.0.0.1:1; }\nnats {\n    %s %s;\n}\n" % (key, name))
        t.eq(rc, 1, "%s %s refused" % (key, name))
        t.check("%s:3:" % path in out and key in out, "%s %s: the error names file:line: %s" % (key, name, out.strip()))
    path, rc, out = gust_t("node_name gust-1_a;\nhttp { listen 127.0.0.1:1; }\n")
    t.eq(rc, 0, "a plain node_name passes: %s" % out.strip())


def main():
    t = Checks()
    names(t)
    twins(t)
    twins_in_cluster(t)
    restart_after_kill(t)
    t.done()


if __name__ == "__main__":
    main()
