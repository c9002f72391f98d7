"""A three-node nats-server cluster with JetStream, streams at three replicas: one
nats-server is killed with -9 while events are being ingested and consumed. Every event
ingest accepted (202) reaches the flow's output; requests refused meanwhile (503) are
retried by the client, as a client of gust would."""
import http.client
import json
import os
import subprocess
import time

from gustlib import Checks, Gust, TempDir, free_port, port_open, read_stream, wait_for

FLOW = """
return { on_event = function(ev) emit("ev.done", { id = ev.id }) end }
"""


class NatsNode:
    def __init__(self, tmp, name, port, cport, routes):
        self.port = port
        self.name = name
        conf = tmp.file("%s.conf" % name, """
server_name: %s
listen: 127.0.0.1:%d
jetstream { store_dir: "%s" }
cluster {
  name: gust
  listen: 127.0.0.1:%d
  routes: [%s]
}
""" % (name, port, os.path.join(tmp.path, "store-" + name), cport,
                ", ".join("nats://127.0.0.1:%d" % r for r in routes)))
        self.log = open(os.path.join(tmp.path, "%s.log" % name), "ab")
        self.proc = subprocess.Popen(["nats-server", "-c", conf], stdout=self.log, stderr=self.log)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def ingest(port, i):
    """POST one event; True when gust answered 202."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("POST", "/ingest/work", body=json.dumps({"id": i}))
        ok = c.getresponse().status == 202
        c.close()
        return ok
    except OSError:
        return False


def main():
    t = Checks()
    tmp = TempDir()
    ports = [free_port() for _ in range(3)]
    cports = [free_port() for _ in range(3)]
    nodes = [NatsNode(tmp, "n%d" % i, ports[i], cports[i], [c for j, c in enumerate(cports) if j != i])
             for i in range(3)]
    g = None
    try:
        for n in nodes:
            wait_for(lambda: port_open(n.port), 10, "nats-server %s" % n.name)
        script = tmp.file("work.lua", FLOW)
        conf = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; replicas 3; ack_wait 2s; publish_timeout 3s; }
flow work { script %s; source ev.work; batch 64; }
""" % (" ".join("nats://127.0.0.1:%d" % p for p in ports), script)
        # JetStream elects its meta leader a few seconds after the routes form.
        g = Gust(tmp, conf, wait_healthy=False)
        wait_for(lambda: g.healthy(), 60, "gust healthy on the cluster")
        total, accepted, retries = 3000, 0, 0
        killed = False
        for i in range(total):
            deadline = time.monotonic() + 60
            while not ingest(g.port, i):
                retries += 1
                if time.monotonic() > deadline:
                    raise AssertionError("event %d never accepted:\n%s" % (i, g.log()[-3000:]))
                time.sleep(0.05)
            accepted += 1
            if i == total // 3 and not killed:
                nodes[1].kill()
                killed = True
        print("accepted %d events, %d retries while a node was down" % (accepted, retries))
        t.eq(accepted, total, "every event accepted")

        # Read the flow's output back from a surviving node until every id is there (or
        # a deadline): events_ok counts redeliveries too, so it can reach the total while a
        # redelivered batch is still being handled.
        def output_ids():
            return {json.loads(data)["id"] for _, subject, data in read_stream("nats://127.0.0.1:%d" % ports[0])
                    if subject == "ev.done"}

        ids = set()
        deadline = time.monotonic() + 90
        while len(ids) < total and time.monotonic() < deadline:
            ids = output_ids()
            if len(ids) < total:
                time.sleep(1)
        missing = sorted(set(range(total)) - ids)
        t.check(not missing, "no event lost with one of three nats-servers killed (%d missing: %s)"
                % (len(missing), missing[:20]))
    finally:
        if g is not None and g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait(10)
        for n in nodes:
            n.kill()
        if t.failed and g is not None:
            print(g.log()[-4000:])
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
