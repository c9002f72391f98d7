"""Bounded storage (issue 24, item 6): `nats { max_bytes 8m; }` under full ingest through a
flow and a sink. Every accepted event is delivered, once per id, and the stream never goes
over its bound by more than 25 %; with the sink down the stream fills and ingest refuses
(503 "not stored: store full"), never dropping an unconsumed event; with the sink back the
backlog drains and every accepted event is delivered. The storage metrics and the units'
backlog are shown."""
import json
import os
import re
import subprocess
import threading
import time

from gustlib import BUILD, SOURCE_DIR, Checks, Gust, NatsServer, TempDir, free_port, js_api, kill_all, wait_for

MAX = 8 << 20
CONF = """
plugin_dir %(plugins)s;
plugin http_out;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_bytes 8m; ack_wait 5s; }
flow orders { script %(src)s/scripts/bench_orders.lua; source ev.orders; }
sink out { use http_out; source ev.orders.out; url http://127.0.0.1:%(sink)d/hit; timeout 1s; }
"""
LOADGEN = os.path.join(BUILD, "bench", "gust-bench-loadgen")
SINK = os.path.join(BUILD, "bench", "gust-bench-sink")


class Sink:
    """gust-bench-sink on a fixed port, so that it can be stopped and started again."""

    def __init__(self, tmp, port):
        self.tmp, self.port, self.proc = tmp, port, None

    def start(self):
        self.proc = subprocess.Popen([SINK, "--port", str(self.port)], stdout=subprocess.PIPE,
                                     stderr=open(os.path.join(self.tmp.path, "sink.log"), "ab"))
        line = self.proc.stdout.readline().decode()
        assert line.startswith("port "), line

    def stats(self):
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            c.request("GET", "/stats")
            return json.loads(c.getresponse().read())
        finally:
            c.close()

    def stop(self):
        """Its stats at the stop (printed on SIGTERM)."""
        self.proc.terminate()
        out = self.proc.communicate(timeout=10)[0].decode()
        return json.loads(out.strip().splitlines()[-1])


def order(ident):
    """An event of bench/WORKLOAD.md, which the flow turns into one for the sink."""
    return json.dumps({"id": ident, "email": "a@b.c", "total_price": "1.00", "t": 1764400000000,
                       "shipping_address": {"country": "Italy"},
                       "line_items": [{"sku": "A", "quantity": "1", "unit_price_cents": 100}]}).encode()


def loadgen(gust, first_id, seconds):
    out = subprocess.run([LOADGEN, "--url", "http://127.0.0.1:%d/ingest/orders" % gust.port, "--connections", "16",
                          "--duration", str(seconds), "--first-id", str(first_id)],
                         check=True, capture_output=True)
    return json.loads(out.stdout)


def stream_bytes(nats):
    return js_api(nats.port, "STREAM.INFO.GUST")["state"]["bytes"]


def metric(gust, name):
    text = gust.request("GET", "/metrics")[1].decode()
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    sink = Sink(tmp, free_port())
    sink.start()
    conf = CONF % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "src": SOURCE_DIR,
                   "sink": sink.port}
    g = Gust(tmp, conf)
    peak = [0]
    stop = threading.Event()

    def watch():  # the stream's size, every 100 ms, while the test runs
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], stream_bytes(nats))
            except (OSError, AssertionError, KeyError, ValueError):
                pass
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    ok = False
    try:
        info = js_api(nats.port, "STREAM.INFO.GUST")
        t.eq(info["config"]["max_bytes"], MAX, "the stream's max_bytes")
        t.eq(info["config"]["discard"], "new", "a full stream refuses new events")

        # 1. Full ingest for 15 s: everything accepted is delivered within 5 s of the end.
        r1 = loadgen(g, 1, 15)
        print("phase 1: %s" % json.dumps(r1), flush=True)
        t.check(r1["accepted"] >= 20000, "at least 20 000 events accepted in 15 s (got %d)" % r1["accepted"])
        end = time.time()
        try:
            wait_for(lambda: sink.stats()["unique"] >= r1["accepted"], 60, "phase 1 delivered")
        except AssertionError:
            pass
        took = time.time() - end
        s1 = sink.stats()
        print("phase 1 sink: %s, %.1f s after the end" % (json.dumps(s1), took), flush=True)
        t.eq(s1["unique"], r1["accepted"], "phase 1: accepted == delivered (distinct ids)")
        t.check(took <= 5.0, "phase 1 delivered within 5 s of the end (took %.1f s)" % took)

        # The metrics and /units.
        t.eq(metric(g, 'gust_stream_max_bytes{stream="GUST"}'), float(MAX), "gust_stream_max_bytes")
        t.check(metric(g, 'gust_stream_bytes{stream="GUST"}') is not None, "gust_stream_bytes")
        t.check(metric(g, 'gust_stream_messages{stream="GUST"}') is not None, "gust_stream_messages")
        for other in ("GUST_DLQ", "GUST_STATE"):
            t.check(metric(g, 'gust_stream_bytes{stream="%s"}' % other) is not None, "gust_stream_bytes of " + other)
        t.eq(metric(g, 'gust_stream_max_bytes{stream="GUST_DLQ"}'), float(64 << 20), "the DLQ's bound")
        t.check(metric(g, 'gust_unit_backlog{unit="out",kind="sink"}') is not None, "gust_unit_backlog of the sink")
        units = json.loads(g.request("GET", "/units")[1])["units"]
        t.check(all("backlog" in u for u in units), "/units shows each unit's backlog")
        # Consumed events are removed as the stream nears its bound: once the sink has
        # caught up, the store takes events again (a burst may have filled it a moment).
        try:
            wait_for(lambda: metric(g, "gust_store_full") == 0.0, 10, "not full")
        except AssertionError:
            pass
        t.eq(metric(g, "gust_store_full"), 0.0, "not full once phase 1 is delivered")

        # 2. The sink down: the stream fills to its bound and ingest refuses.
        delivered_before = s1["unique"]
        sink.stop()
        # Rounds until the store refuses: how many it takes depends on the machine's load.
        r2 = loadgen(g, 1000000, 12)
        for rnd in range(1, 6):
            if r2["non_202"] > 0:
                break
            more = loadgen(g, 1000000 + 1000000 * rnd, 12)
            for k in ("accepted", "non_202"):
                r2[k] += more[k]
        print("phase 2: %s" % json.dumps(r2), flush=True)
        t.check(r2["non_202"] > 0, "with the sink down, ingest refuses once the store is full")
        refused = None
        for i in range(2000):  # what room is left goes to the first of these
            st, body, _ = g.request("POST", "/ingest/orders", body=order("SO#full%d" % i))
            if st != 202:
                refused = (st, json.loads(body).get("error"))
                break
            r2["accepted"] += 1
        t.eq(refused, (503, "not stored: store full"), "ingest when full")
        t.eq(metric(g, "gust_store_full"), 1.0, "gust_store_full while full")
        st, body, _ = g.request("GET", "/healthz")
        causes = [c["cause"] for c in json.loads(body).get("causes", [])]
        t.check(st == 503 and "store_full" in causes, "/healthz 503 naming store_full while full: %d %s" % (st, body))
        backlog = metric(g, 'gust_unit_backlog{unit="out",kind="sink"}')
        t.check(backlog is not None and backlog > 1000, "the sink's backlog is shown (%s)" % backlog)

        # 3. The sink back: the backlog drains within 60 s, and every accepted event is
        # delivered.
        sink.start()
        back = time.time()
        want = r1["accepted"] + r2["accepted"]
        try:
            wait_for(lambda: sink.stats()["unique"] >= want - delivered_before, 90, "the backlog delivered")
        except AssertionError:
            pass
        took = time.time() - back
        s3 = sink.stats()
        print("phase 3 sink: %s, %.1f s after the sink came back" % (json.dumps(s3), took), flush=True)
        # The sink restarted with fresh counts: ids of phase 1 delivered again would be
        # counted here; none should be (they were acked).
        t.eq(delivered_before + s3["unique"], want, "accepted == delivered after the outage (distinct ids)")
        t.check(took <= 60, "the backlog drained within 60 s (%.1f s)" % took)
        if t.failed:
            print("units: %s" % g.request("GET", "/units")[1].decode())
            for c in ("flow_orders", "sink_out"):
                print("%s: %s" % (c, json.dumps(js_api(nats.port, "CONSUMER.INFO.GUST.%s" % c))))
            print("stream: %s" % json.dumps(js_api(nats.port, "STREAM.INFO.GUST")["state"]))
        wait_for(lambda: metric(g, "gust_store_full") == 0.0, 10, "store no longer full")
        st, _, _ = g.request("POST", "/ingest/orders", body=order("SO#after"))
        t.eq(st, 202, "ingest accepts again once consumed events are removed")
        wait_for(lambda: g.request("GET", "/healthz")[0] == 200, 10, "/healthz 200 again by itself")
        stop.set()
        watcher.join(5)
        print("peak stream bytes: %d (bound %d)" % (peak[0], MAX), flush=True)
        t.check(peak[0] <= MAX * 1.25, "the stream never over its bound by more than 25 %% (peak %d)" % peak[0])
        ok = t.failed == 0
    finally:
        stop.set()
        if sink.proc and sink.proc.poll() is None:
            sink.proc.kill()
        kill_all([g], nats, failed=not ok)
        if ok:
            tmp.cleanup()
        else:
            print("kept", tmp.path)
    t.done()


if __name__ == "__main__":
    main()
