"""Reload under load: events posted (at least 20 000) while SIGHUP arrives every 300 ms,
at least 20 times, and the flow script changes twice (and once to a broken version,
which is refused): every event is delivered, no request gets a 5xx, the last good
version is in effect at the end, and /units reports the generations. The load goes on
until the reloads are done, however fast the machine posts."""
import http.client
import json
import os
import signal
import threading
import time

from gustlib import Checks, Gust, NatsServer, TempDir, wait_for

N = 20000
THREADS = 4
SCRIPT = """
return {
  source = "ev.in",
  on_event = function(ev) emit("ev.out", { id = ev.id, v = %d }) end,
}
"""
CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; }
flow f { script f.lua; }
"""


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("f.lua", SCRIPT % 1)
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % nats.url)
    statuses = {}
    lock = threading.Lock()
    reloads_done = threading.Event()
    posted = [0] * THREADS

    def post(k):
        c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=30)
        i = k
        while i < N or not reloads_done.is_set():
            c.request("POST", "/ingest/in", body=b'{"id": %d}' % i)
            r = c.getresponse()
            r.read()
            with lock:
                statuses[r.status] = statuses.get(r.status, 0) + 1
            posted[k] += 1
            i += THREADS
        c.close()

    posters = [threading.Thread(target=post, args=(k,)) for k in range(THREADS)]
    for p in posters:
        p.start()
    hups = 0
    versions = iter([(5, 2), (10, "broken"), (15, 3)])
    pending = next(versions)
    while any(p.is_alive() for p in posters):
        time.sleep(0.3)
        if pending is not None and hups >= pending[0]:
            v = pending[1]
            tmp.file("f.lua", SCRIPT % v if v != "broken" else "return { on_event = function(ev) emit( end }\n")
            pending = next(versions, None)
        g.proc.send_signal(signal.SIGHUP)
        hups += 1
        if hups >= 20:
            reloads_done.set()
    for p in posters:
        p.join()
    total = sum(posted)
    t.eq(statuses, {202: total}, "every post answered 202, none 5xx (%d posts, %d SIGHUPs)" % (total, hups))

    # The last good version (3) runs now: a fresh event gets v = 3.
    g.proc.send_signal(signal.SIGHUP)
    time.sleep(1)
    t.eq(g.request("POST", "/ingest/in", b'{"id": -1}')[0], 202, "post after the last reload")

    def outputs():
        return [json.loads(m[2]) for m in nats.read_stream() if m[1] == "ev.out"]
    out = wait_for(lambda: (lambda o: len({x["id"] for x in o}) >= total + 1 and o)(outputs()), 60, "every event delivered")
    ids = [x["id"] for x in out]
    t.eq(len(set(ids)), total + 1, "every id delivered")
    print("delivered %d unique, %d duplicates" % (len(set(ids)), len(ids) - len(set(ids))))
    last = [x for x in out if x["id"] == -1]
    t.eq([x["v"] for x in last][-1:], [3], "the last script version is in effect")
    t.check(set(x["v"] for x in out) <= {1, 2, 3}, "only good versions ran")

    units = json.loads(g.request("GET", "/units")[1])
    # SIGHUPs that arrive during a reload coalesce into one more: fewer reloads than signals.
    t.check(units["reload_count"] >= 10, "reload_count %d (for %d SIGHUPs)" % (units["reload_count"], hups))
    t.check(units["generation"] > 1, "generation advanced: %d" % units["generation"])
    log = g.log()
    t.check("reload failed, keeping the running configuration" in log and "f.lua" in log,
            "the broken script was refused with its file name")
    # A reload that moves the flow to another source: its consumer is recreated.
    tmp.file("f.lua", (SCRIPT % 4).replace('"ev.in"', '"ev.in2"'))
    g.proc.send_signal(signal.SIGHUP)
    def sources():  # empty for a moment while the generations swap
        return [u["source"] for u in json.loads(g.request("GET", "/units")[1])["units"]]
    wait_for(lambda: sources() == ["ev.in2"], 10, "the unit on its new source")
    t.eq(g.request("POST", "/ingest/in2", b'{"id": -2}')[0], 202, "post to the new source")
    moved = wait_for(lambda: [x for x in outputs() if x["id"] == -2], 10, "output from the new source")
    t.eq([x["v"] for x in moved], [4], "the moved flow runs its new version")
    t.eq(g.stop(), 0, "clean stop")
    nats.stop()
    if t.failed:
        print(log[-4000:])
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
