"""A bus server that stops answering under load: nats-server is stopped with SIGSTOP
for 10 s while events are posted to a flow with a sink behind it. /healthz must turn 503
within the keepalive bound (ping_interval x (max_pings_out + 1)), no request may wait
past its publish timeout, and after SIGCONT every event that was answered 202 reaches
the stream and, through the flow, the sink."""
import http.client
import json
import os
import signal
import threading
import time

from gustlib import BUILD, Checks, Gust, HttpSink, NatsServer, TempDir, wait_for

PING_MS, MAX_PINGS, TIMEOUT_MS = 500, 2, 2000
KEEPALIVE_S = PING_MS * (MAX_PINGS + 1) / 1000.0
FREEZE_S = 10

FLOW = 'return { source = "ev.load", on_event = function(ev) emit("ev.load.out", { id = ev.id }) end }\n'

CONF = """
plugin_dir %(plugins)s;
plugin http_out;
http { listen 127.0.0.1:@PORT@; }
nats {
    url %(url)s;
    publish_timeout %(timeout)dms;
    ping_interval %(ping)dms;
    max_pings_out %(pings)d;
    reconnect_wait 100ms;
    reconnect_max_wait 1s;
}
flow load { script %(tmp)s/load.lua; }
sink out { use http_out; source ev.load.out; url http://127.0.0.1:%(sink)d/hit; timeout 2s; }
"""


class Load:
    """Threads posting events with unique ids over keep-alive connections."""

    def __init__(self, port, threads=4):
        self.port = port
        self.results = []  # (id, status, seconds, error)
        self.lock = threading.Lock()
        self.running = True
        self.next_id = 0
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]
        for th in self.threads:
            th.start()

    def take_id(self):
        with self.lock:
            self.next_id += 1
            return self.next_id

    def run(self):
        c = None
        while self.running:
            i = self.take_id()
            start = time.monotonic()
            try:
                if c is None:
                    c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT_MS / 1000 + 10)
                c.request("POST", "/ingest/load", json.dumps({"id": i}).encode())
                r = c.getresponse()
                body = json.loads(r.read())
                status, err = r.status, body.get("error")
            except (OSError, http.client.HTTPException) as e:
                status, err = -1, repr(e)
                c = None
            with self.lock:
                self.results.append((i, status, time.monotonic() - start, err))
            if status != 202:
                time.sleep(0.02)

    def stop(self):
        self.running = False
        for th in self.threads:
            th.join(30)


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("load.lua", FLOW)
    nats = NatsServer(tmp)
    sink = HttpSink()
    g = Gust(tmp, CONF % {"plugins": os.path.join(BUILD, "plugins"), "url": nats.url, "timeout": TIMEOUT_MS,
                          "ping": PING_MS, "pings": MAX_PINGS, "tmp": tmp.path, "sink": sink.port})
    load = None
    try:
        load = Load(g.port)
        wait_for(lambda: len(sink.received()) >= 50, 20, "events through the flow before the freeze")
        nats.proc.send_signal(signal.SIGSTOP)
        frozen_at = time.monotonic()
        wait_for(lambda: g.request("GET", "/healthz", timeout=5)[0] == 503, KEEPALIVE_S + 5, "/healthz 503")
        noticed = time.monotonic() - frozen_at
        t.check(noticed <= KEEPALIVE_S + 1.0, "/healthz 503 after %.2f s (bound %.1f s)" % (noticed, KEEPALIVE_S))
        while time.monotonic() < frozen_at + FREEZE_S:
            t.eq(g.request("GET", "/healthz", timeout=5)[0], 503, "/healthz while frozen")
            time.sleep(0.5)
        nats.proc.send_signal(signal.SIGCONT)
        wait_for(lambda: g.healthy(), 30, "/healthz 200 after SIGCONT")
        time.sleep(1)
        load.stop()

        results = list(load.results)
        accepted = [i for i, status, _, _ in results if status == 202]
        refused = [r for r in results if r[1] != 202]
        slowest = max(r[2] for r in results)
        t.check(slowest < TIMEOUT_MS / 1000 + 1.0, "the slowest request took %.2f s (timeout %.1f s)"
                % (slowest, TIMEOUT_MS / 1000))
        t.check(all(r[1] == 503 and r[3] for r in refused), "every refusal is a 503 with a JSON error: %r"
                % [r for r in refused if r[1] != 503][:5])
        t.check(len(refused) > 0, "requests during the freeze were refused (%d)" % len(refused))
        t.check(any("outcome unknown" in (r[3] or "") for r in refused),
                "some refusals say the outcome is unknown (they were in flight)")
        t.check(len(accepted) > 100, "events accepted around the freeze: %d" % len(accepted))
        print("accepted %d, refused %d (outcome unknown %d), /healthz 503 after %.2f s, slowest %.2f s"
              % (len(accepted), len(refused), sum("outcome unknown" in (r[3] or "") for r in refused), noticed,
                 slowest))

        stored = {json.loads(m[2])["id"] for m in nats.read_stream() if m[1] == "ev.load"}
        lost = sorted(set(accepted) - stored)
        t.eq(lost, [], "every accepted event is in the stream")
        try:
            wait_for(lambda: set(accepted) <= {json.loads(b)["id"] for b in sink.received()}, 60,
                     "every accepted event at the sink")
        except AssertionError as e:
            missing = sorted(set(accepted) - {json.loads(b)["id"] for b in sink.received()})
            t.check(False, "%s: %d missing, e.g. %r" % (e, len(missing), missing[:10]))
        t.check(g.proc.poll() is None, "gust is alive")
    finally:
        if load is not None:
            load.stop()
        if nats.proc is not None and nats.proc.poll() is None:
            nats.proc.send_signal(signal.SIGCONT)
        if t.failed:
            print(g.log()[-4000:])
        g.stop()
        sink.close()
        nats.stop()
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
