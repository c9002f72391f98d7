"""http_out honours Retry-After (issue 24, item 8): a 429 or 503 carrying one pauses the
whole sink, not just the one message, for that many seconds or until that HTTP-date,
capped by the sink's retry_max_delay."""
import email.utils
import json
import os
import time

from gustlib import BUILD, Checks, FarEnd, Gust, NatsServer, TempDir, wait_for

PLUGINS = os.path.join(BUILD, "plugins")

CONF = """
plugin_dir %(plugins)s;
plugin http_out;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_deliver 20; retry_delay 200ms; retry_max_delay 5s; }
sink out { use http_out; source ev.out; url http://127.0.0.1:%(port)d/hit; timeout 2s;
           retry_max_delay %(cap)s; batch 1; }
"""


def first_answered(first):
    """A far end whose first answer is `first` (status, Retry-After value or a callable
    making it), every later one 200."""
    def answer(req):
        if sink.requests()[0] is not req:
            return 200
        status, retry_after = first
        return status, "", {"Retry-After": retry_after() if callable(retry_after) else retry_after}
    sink = FarEnd(answer)
    return sink


def run(t, nats, label, first, cap, want_min, want_max, later=0):
    """One event, answered `first`; with later > 0 a second event ingested 0.5 s after
    the first answer, which the pause must hold back as well."""
    sink = first_answered(first)
    tmp = TempDir()
    g = Gust(tmp, CONF % {"plugins": PLUGINS, "nats": nats.url, "port": sink.port, "cap": cap})
    try:
        t.eq(g.request("POST", "/ingest/out", json.dumps({"id": 1}).encode())[0], 202, "%s: ingest" % label)
        wait_for(lambda: len(sink.requests()) >= 1, 10, "%s: the first request" % label)
        if later:
            time.sleep(0.5)
            t.eq(g.request("POST", "/ingest/out", json.dumps({"id": 2}).encode())[0], 202,
                 "%s: second ingest" % label)
        wait_for(lambda: len(sink.requests()) >= 1 + 1 + later, 20, "%s: every event delivered" % label)
        t0 = sink.requests()[0].t
        gaps = [round(h.t - t0, 2) for h in sink.requests()[1:]]
        print("%s: requests after the first at %s s" % (label, gaps))
        t.check(want_min <= min(gaps) and max(gaps) <= want_max,
                "%s: every later request between %.1f and %.1f s after the first: %s" %
                (label, want_min, want_max, gaps))
        bodies = sorted(h.json()["id"] for h in sink.requests()[1:])
        t.eq(bodies, list(range(1, 2 + later)), "%s: each event delivered once after the pause" % label)
    finally:
        g.stop()
        sink.close()


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    try:
        run(t, nats, "429 Retry-After: 3", (429, "3"), "10s", 2.7, 6.0)
        run(t, nats, "429 holds the whole sink", (429, "3"), "10s", 2.7, 6.0, later=1)
        date = lambda: email.utils.formatdate(time.time() + 4, usegmt=True)
        run(t, nats, "503 Retry-After: HTTP-date", (503, date), "10s", 2.5, 7.0)
        run(t, nats, "capped by retry_max_delay", (429, "60"), "1s", 0.9, 4.0)
    finally:
        nats.stop()
    t.done()


if __name__ == "__main__":
    main()
