"""The embedded default: no nats url, gust starts and supervises its own nats-server
with its store under state_dir, and leaves no child behind after SIGTERM."""
import json
import os
import time

from gustlib import Checks, Gust, TempDir, children_of, wait_for

CONF = """
state_dir state;
http { listen 127.0.0.1:@PORT@; }
"""


def main():
    t = Checks()
    tmp = TempDir()
    g = Gust(tmp, CONF)
    try:
        kids = children_of(g.proc.pid)
        t.eq(len(kids), 1, "one child process")
        with open("/proc/%d/cmdline" % kids[0], "rb") as f:
            cmd = f.read().split(b"\0")
        t.check(b"-js" in cmd and os.path.basename(cmd[0].decode()) == "nats-server", "the child is nats-server -js")
        t.check(os.path.isdir(os.path.join(tmp.path, "state", "nats")), "store under state_dir")
        status, body, _ = g.request("POST", "/ingest/demo", b'{"a":1}')
        t.eq(status, 202, "ingest on the embedded server")
        t.eq(json.loads(body)["subject"], "ev.demo", "subject")

        # The supervisor restarts a child that dies, and ingest recovers.
        os.kill(kids[0], 9)
        def replaced():
            now = children_of(g.proc.pid)
            return len(now) == 1 and now[0] != kids[0]
        wait_for(replaced, 10, "a new nats-server child")
        wait_for(lambda: g.request("POST", "/ingest/demo", b'{"a":2}')[0] == 202, 15, "ingest after the restart")
        child = children_of(g.proc.pid)[0]

        start = time.monotonic()
        t.eq(g.stop(), 0, "exit status")
        t.check(time.monotonic() - start < 2.5, "exits within 2 s")
        t.check(not os.path.exists("/proc/%d" % child) or open("/proc/%d/stat" % child).read().split()[2] == "Z",
                "no nats-server left behind")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        if t.failed:
            print(g.log()[-4000:])
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
