"""http_out in order (issue 27, item 7), against a far end of our own that records what
it got and when:

- `ordered on`: a 10 s 503 outage while 3 000 events come at 300/s costs at most 100
  requests, and then every event arrives once, in stream order (batches of up to 20,
  one in flight);
- a kill -9 of gust during an outage, and a restart: still stream order, each once (the
  restart reads the consumer again from its ack floor);
- `ordered_by "{payload.k}"` with 3 keys: while key b's requests fail for 3 s, a and c
  keep flowing, and each key's events arrive in their order;
- `ordered on` with `ordered_by` is refused at load, naming file:line."""
import http.server
import json
import os
import signal
import threading
import time

from gustlib import BUILD, Checks, Gust, NatsServer, TempDir, check_config_errors, nats_publish, wait_for

PLUGINS = os.path.join(BUILD, "plugins")

CONF = """
plugin_dir %(plugins)s;
plugin http_out;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; retry_delay 200ms; retry_max_delay 2s; }
sink o { use http_out; source ev.o; url http://127.0.0.1:%(port)d/o; timeout 2s; retry_max_delay 2s;
         %(sink)s }
"""


class FarEnd:
    """Answers status(events) (200 when it returns None); records (time, status, events)
    of every request. A body is one event, or a JSON array of them."""

    def __init__(self, status):
        self.status = status
        self.log = []
        self.lock = threading.Lock()
        far = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                doc = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                evs = doc if isinstance(doc, list) else [doc]
                with far.lock:
                    code = far.status(evs) or 200
                    far.log.append((time.monotonic(), code, evs))
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def delivered(self, key=None):
        """The ids of the events answered 2xx, in the order they came."""
        with self.lock:
            return [e["id"] for _, code, evs in self.log if code < 300 for e in evs if key is None or e["k"] == key]

    def count(self, code):
        with self.lock:
            return sum(1 for _, c, _ in self.log if c == code)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def publish(nats, first, n, keys=("a",)):
    nats_publish(nats.port, [("ev.o", json.dumps({"id": i, "k": keys[i % len(keys)]}).encode())
                             for i in range(first, first + n)])


def paced(nats, first, last, per_s, keys=("a",), until=None):
    """Publishes ids first..last at per_s a second (a tenth of a second's worth at a
    time); with until, stops early once until() says so. Returns the next id."""
    step, t0, i = per_s // 10, time.monotonic(), first
    while i <= last and not (until and until()):
        publish(nats, i, min(step, last - i + 1), keys)
        i += step
        time.sleep(max(0.0, t0 + (i - first) / per_s - time.monotonic()))
    return min(i, last + 1)


def in_order(t, what, got, want):
    dup = len(got) - len(set(got))
    t.check(got == want, "%s: %d events in stream order, each once (got %d, %d repeated, first out of place: %s)" %
            (what, len(want), len(got), dup, next(((k, a, b) for k, (a, b) in enumerate(zip(got, want)) if a != b),
                                                 None)))


def unit(g):
    return [u for u in json.loads(g.request("GET", "/units")[1])["units"] if u["name"] == "o"][0]


def outage(t, nats):
    """10 s of 503 while 3 000 events come at 300/s, batches of 20 in order."""
    down = [True]
    far = FarEnd(lambda evs: 503 if down[0] else None)
    tmp = TempDir()
    g = Gust(tmp, CONF % {"plugins": PLUGINS, "nats": nats.url, "port": far.port,
                          "sink": "ordered on; batch_max 20; batch_linger 5ms;"})
    try:
        t.eq(unit(g).get("ordered"), "stream", "outage: /units shows the sink in stream order")
        t0 = time.monotonic()
        paced(nats, 1, 3000, 300)
        time.sleep(max(0.0, t0 + 10 - time.monotonic()))
        failed = far.count(503)
        down[0] = False
        print("outage: %d requests answered 503 in 10 s" % failed)
        t.check(1 <= failed <= 100, "outage: at most 100 requests during it (%d)" % failed)
        wait_for(lambda: len(far.delivered()) >= 3000, 40, "outage: 3000 events delivered")
        with far.lock:
            ok = [tm for tm, code, _ in far.log if code < 300]
        print("outage: the 3000 drained in %.1f s, %d requests, from the first 2xx" %
              (ok[-1] - ok[0], len(ok)))
        time.sleep(0.5)  # anything sent twice would come now
        in_order(t, "outage", far.delivered(), list(range(1, 3001)))
        sizes = [len(evs) for _, code, evs in far.log if code < 300]
        t.check(max(sizes) <= 20, "outage: batches of at most 20 (%d)" % max(sizes))
    finally:
        g.stop()
        far.close()


def restart(t, nats):
    """kill -9 during an outage, a restart, events coming all along: still stream order."""
    state = {"down": False, "recovered": False}

    def status(evs):
        if not state["recovered"] and evs[-1]["id"] >= 200:
            state["down"] = True
        return 503 if state["down"] and not state["recovered"] else None

    far = FarEnd(status)
    tmp = TempDir()
    conf = CONF % {"plugins": PLUGINS, "nats": nats.url, "port": far.port, "sink": "ordered on;"}
    g = Gust(tmp, conf)
    try:
        publish(nats, 1, 1, ("r",))  # a first event, so that the consumer exists
        wait_for(lambda: far.delivered() == [1], 10, "restart: the first event")
        nxt = paced(nats, 2, 1500, 300, ("r",), until=lambda: far.count(503) > 0)
        # Down for 4 s, events coming all along: the held batch is marked in progress
        # (ack_wait 5 s) while later ones wait behind it.
        t_down = time.monotonic()
        nxt = paced(nats, nxt, 1500, 300, ("r",), until=lambda: time.monotonic() - t_down > 4.0)
        t.check(far.count(503) >= 2, "restart: the far end was down for a while before the kill")
        g.stop(sig=signal.SIGKILL)
        before = far.delivered()
        if nxt <= 1500:
            publish(nats, nxt, 1501 - nxt, ("r",))
        g = Gust(tmp, conf, port=g.port)
        time.sleep(1.0)
        state["recovered"] = True
        wait_for(lambda: len(far.delivered()) >= 1500, 40, "restart: 1500 events delivered")
        time.sleep(0.5)
        print("restart: %d delivered before the kill, %d requests answered 503" % (len(before), far.count(503)))
        in_order(t, "restart", far.delivered(), list(range(1, 1501)))
    finally:
        g.stop()
        far.close()


def by_key(t, nats):
    """ordered_by "{payload.k}": b fails for 3 s from its first request; a and c go on."""
    b_until = []

    def status(evs):
        if evs[0]["k"] != "b":
            return None
        if not b_until:
            b_until.append(time.monotonic() + 3.0)
        return 503 if time.monotonic() < b_until[0] else None

    far = FarEnd(status)
    tmp = TempDir()
    conf = CONF.replace("retry_delay 200ms; retry_max_delay 2s;", "retry_delay 100ms; retry_max_delay 1s;") % {
        "plugins": PLUGINS, "nats": nats.url, "port": far.port,
        "sink": 'ordered_by "{payload.k}"; connections 4;'}
    g = Gust(tmp, conf)
    try:
        t.eq(unit(g).get("ordered"), "key", "by key: /units shows the sink ordered per key")
        paced(nats, 0, 899, 300, ("a", "b", "c"))
        wait_for(lambda: b_until and time.monotonic() > b_until[0], 10, "by key: b's failures over")
        with far.lock:
            during = [e["k"] for tm, code, evs in far.log if code < 300 and tm < b_until[0] for e in evs]
        print("by key: during b's failures, delivered a %d, b %d, c %d; %d requests answered 503" %
              (during.count("a"), during.count("b"), during.count("c"), far.count(503)))
        t.check(during.count("a") >= 150 and during.count("c") >= 150 and during.count("b") == 0,
                "by key: a and c flow while b fails (a %d, c %d, b %d)" %
                (during.count("a"), during.count("b"), during.count("c")))
        held = unit(g).get("plugin", {})
        print("by key: /units plugin counters after the failures: %r" % held)
        wait_for(lambda: len(far.delivered()) >= 900, 40, "by key: 900 events delivered")
        time.sleep(0.5)
        for i, k in enumerate("abc"):
            in_order(t, "by key %s" % k, far.delivered(k), list(range(i, 900, 3)))
    finally:
        g.stop()
        far.close()


def config_errors(t, nats):
    """The two ways to order exclude each other; a key template has a placeholder."""
    u = "sink o { use http_out; source ev.o; url http://127.0.0.1:9/o; %s }"
    check_config_errors(t, TempDir(), nats, "http_out", [
        (u % 'ordered on; ordered_by "{payload.k}";', "ordered_by: orders per key, ordered on orders everything"),
        (u % 'ordered_by "all";', 'ordered_by: "all" has no placeholder'),
        (u % "ordered maybe;", "ordered"),
    ], "-t")


def main():
    t = Checks()
    for part in (config_errors, outage, restart, by_key):
        nats = NatsServer(TempDir())  # each its own stream and consumer
        try:
            part(t, nats)
        finally:
            nats.stop()
    t.done()


if __name__ == "__main__":
    main()
