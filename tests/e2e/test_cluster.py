"""Several gust processes on one NATS: they share each unit's durable consumer (a killed
process's unacked messages go to the others after ack_wait), and a singleton source runs
in exactly one of them, under a lease in KV: a clean stop hands it over at once, a
kill -9 after the lease's TTL, and a reload keeps it."""
import json
import os
import signal

from gustlib import BUILD, Checks, Gust, NatsServer, TempDir, kill_all, nats_publish, wait_for

PLUGINS = os.path.join(BUILD, "test-plugins")

FLOW = """
return {
  on_event = function(ev)
    emit("ev.done", { id = ev.id })
  end,
}
"""

CONF = """
plugin_dir %(plugins)s;
plugin test_source;
node_name %(node)s;
http { listen 127.0.0.1:@PORT@; }
nats { url %(url)s; ack_wait 2s; lease_ttl %(ttl)s; lease_poll 200ms; }
flow work { script %(script)s; source ev.work; batch 32; }
source hello { use test_once; subject ev.hello; payload "{\\"hello\\":1}"; }
"""


def start(nats, node, ttl="3s"):
    tmp = TempDir()
    script = tmp.file("work.lua", FLOW)
    return Gust(tmp, CONF % {"plugins": PLUGINS, "node": node, "url": nats.url, "ttl": ttl, "script": script})


def cluster_view(g):
    status, body, _ = g.request("GET", "/units")
    assert status == 200, body
    return json.loads(body)["cluster"]


def lease(g):
    return [x for x in cluster_view(g)["leases"] if x["name"] == "hello"][0]


def starts(g):
    return g.log().count("publishing once to ev.hello")


def hellos(nats):
    return [m for m in nats.read_stream() if m[1] == "ev.hello"]


def done_ids(nats):
    return [p["id"] for p in nats.payloads("ev.done")]


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    procs = []
    try:
        # node-a's lease would outlive the test: only a give-back can hand it over.
        a = start(nats, "node-a", ttl="60s")
        procs.append(a)
        wait_for(lambda: starts(a) == 1, 10, "node-a starts the source")
        b = start(nats, "node-b")
        procs.append(b)
        wait_for(lambda: lease(b)["holder"] == "node-a", 10, "node-b sees node-a's lease")
        t.eq(starts(b), 0, "the second process does not run the singleton source")
        t.eq(lease(a)["held"], True, "node-a says it holds the lease")
        t.eq(cluster_view(b)["self"], "node-b", "/units names the process")
        t.eq(lease(b)["held"], False, "node-b does not hold it")

        # Shared work: both take from the one durable consumer; every event is done once.
        nats_publish(nats.port, [("ev.work", json.dumps({"id": i}).encode()) for i in range(3000)])
        wait_for(lambda: len(done_ids(nats)) >= 3000, 30, "3000 events done")
        ids = done_ids(nats)
        t.eq(sorted(set(ids)), list(range(3000)), "every event done")
        t.eq(len(ids), 3000, "none done twice (no process died)")
        oks = []
        for g in (a, b):
            units = json.loads(g.request("GET", "/units")[1])["units"]
            oks.append([u for u in units if u["name"] == "work"][0]["events_ok"])
        t.eq(sum(oks), 3000, "the two processes' counts add up: %s" % oks)
        t.check(min(oks) > 0, "both processes took a share: %s" % oks)

        # A reload of the holder keeps the lease in the process: its new generation's
        # source starts again there, the peer's never does.
        a.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: starts(a) == 2, 10, "node-a's new generation starts the source")
        t.eq(lease(a)["held"], True, "node-a still holds the lease after a reload")
        t.eq(starts(b), 0, "node-b did not take it during the reload")

        # A clean stop gives the lease back: node-b takes it at its next poll, long before
        # node-a's 60 s TTL could have run out.
        t.eq(a.stop(), 0, "node-a stops cleanly")
        wait_for(lambda: starts(b) == 1, 20, "node-b takes over the source at once")
        t.eq(lease(b)["holder"], "node-b", "node-b holds the lease now")

        # kill -9: the lease is left behind; a restarted node-a waits for it to expire.
        a2 = start(nats, "node-a")
        procs.append(a2)
        wait_for(lambda: lease(a2)["holder"] == "node-b", 10, "the new node-a sees node-b's lease")
        b.proc.kill()
        b.proc.wait(10)
        wait_for(lambda: starts(a2) == 1, 10, "node-a takes the source after the TTL")
        t.eq(len(hellos(nats)), 4, "the source ran once per holder start: a, a reloaded, b, a again")

        # Shared work across a kill -9: events a dead process held unacked are
        # redelivered to the survivor after ack_wait.
        b2 = start(nats, "node-b")
        procs.append(b2)
        nats_publish(nats.port, [("ev.work", json.dumps({"id": i}).encode()) for i in range(3000, 8000)])
        wait_for(lambda: len(done_ids(nats)) > 4000, 30, "events flowing")
        b2.proc.kill()
        b2.proc.wait(10)
        wait_for(lambda: set(range(8000)) <= set(done_ids(nats)), 40, "every event done after the kill")
        ids = done_ids(nats)
        t.eq(sorted(set(ids)), list(range(8000)), "no event lost across kill -9 of one process")
    finally:
        kill_all(procs, nats, t.failed)
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
