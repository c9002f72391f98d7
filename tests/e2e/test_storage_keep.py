"""`nats { keep }` (issue 24, item 6): consumed events stay for `keep`, then go; events on
subjects no unit reads count as consumed; unconsumed ones stay; on an external NATS with
none of max_bytes, max_age, keep set, nothing is removed."""
import json
import time

from gustlib import Checks, Gust, NatsServer, TempDir, kill_all, wait_for

CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_deliver 1000; retry_delay 500ms; %(keep)s }
relay copy { source ev.in; to ev.copied; }
flow stuck { script %(script)s; source ev.held; }
"""
FAILING = 'return { on_event = function(ev) error("not now") end }\n'



def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    procs = []
    ok = False
    try:
        def start(keep):
            g = Gust(tmp, CONF % {"nats": nats.url, "keep": keep, "script": tmp.file("stuck.lua", FAILING)})
            procs.append(g)
            return g

        def post(g, suffix, n):
            for i in range(n):
                st, _, _ = g.request("POST", "/ingest/" + suffix, body=json.dumps({"i": i}).encode())
                t.eq(st, 202, "ingest")

        # No bound set on an external NATS: nothing is removed.
        g = start("")
        post(g, "in", 20)
        post(g, "unread", 5)
        wait_for(lambda: nats.count() == 45, 10, "20 in, 20 copies, 5 unread")
        time.sleep(2)
        t.eq(nats.count(), 45, "nothing removed without max_bytes, max_age or keep")
        g.stop()

        # keep 1s: consumed events go about a second after they were stored, those on
        # subjects nobody reads with them.
        g = start("keep 1s;")
        # The stream's last message always stays (retention.c: a purge of every message
        # races new ones on nats-server 2.9).
        wait_for(lambda: nats.count() == 1, 10, "everything consumed but the last removed after keep")
        post(g, "in", 10)
        wait_for(lambda: len(nats.payloads("ev.copied")) == 10, 10, "copied")
        t.check(nats.count() > 0, "kept for a while after being consumed")
        wait_for(lambda: nats.count() == 1, 10, "removed once older than keep (all but the last)")

        # Events a unit has not consumed (its flow fails them, for now) stay.
        post(g, "held", 3)
        post(g, "in", 5)
        time.sleep(3)
        t.eq(len(nats.payloads("ev.held")), 3, "unconsumed events stay past keep")
        t.eq(len(nats.payloads("ev.in")), 5, "and what came after them (a purge is below the lowest floor)")
        g.stop()
        ok = t.failed == 0
    finally:
        kill_all(procs, nats, failed=not ok)
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
