"""A clean stop hands back what a unit was sent ahead of its batch. A unit asks for its
next batch while it runs one, so a process that stops holds messages it will not run;
it NAKs them, and another process of the cluster takes them at once instead of after
ack_wait (60 s here: the test would time out waiting for them)."""
import json

from gustlib import Checks, Gust, NatsServer, TempDir, kill_all, nats_publish, wait_for

# Slow enough per event that the asked-ahead batch is waiting when the stop comes.
FLOW = """
return {
  on_event = function(ev)
    local x = 0
    for i = 1, 2000000 do x = x + i end
    emit("ev.done", { id = ev.id })
  end,
}
"""

CONF = """
node_name %(node)s;
http { listen 127.0.0.1:@PORT@; }
nats { url %(url)s; ack_wait 60s; }
flow work { script %(script)s; source ev.work; batch 16; }
"""

EVENTS = 1000


def start(nats, node):
    tmp = TempDir()
    return Gust(tmp, CONF % {"node": node, "url": nats.url, "script": tmp.file("work.lua", FLOW)})


def done_ids(nats):
    return [p["id"] for p in nats.payloads("ev.done")]


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    procs = []
    try:
        a = start(nats, "node-a")
        procs.append(a)
        nats_publish(nats.port, [("ev.work", json.dumps({"id": i}).encode()) for i in range(EVENTS)])
        wait_for(lambda: len(done_ids(nats)) >= 48, 30, "node-a working")
        b = start(nats, "node-b")
        procs.append(b)
        t.eq(a.stop(), 0, "node-a stops cleanly")
        done_by_a = len(done_ids(nats))
        t.check(done_by_a < EVENTS, "node-a stopped with work left (%d of %d done)" % (done_by_a, EVENTS))
        wait_for(lambda: len(done_ids(nats)) >= EVENTS, 30, "node-b does the rest, well within ack_wait")
        ids = done_ids(nats)
        t.eq(sorted(ids), list(range(EVENTS)), "every event done once")
    finally:
        kill_all(procs, nats, t.failed)
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
