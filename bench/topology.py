"""GET /topology at 50 units: 25 flows each feeding a relay, events flowing, timed over
one keep-alive connection, with GET /livez on the same connection as the baseline (what
any answer costs: parsing, the loop, loopback). Correctness first: the graph has the 50
units, the ingest and DLQ nodes and an edge per flow and relay. Target: /topology under
1 ms (p50, sparklines included). Prints JSON and writes bench/results/topology.json
(bench/provenance.py)."""
import argparse
import http.client
import json
import os
import sys
import time

import provenance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from gustlib import Gust, NatsServer, TempDir, wait_for  # noqa: E402

BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
FLOW = 'return { on_event = function(ev) emit("ev.out." .. ev.i, ev) end }\n'


def timed(conn, path, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        times.append(time.perf_counter() - t0)
        assert r.status == 200, (path, r.status, body[:200])
    times.sort()
    return {"p50_ms": round(times[len(times) // 2] * 1e3, 3), "p99_ms": round(times[int(len(times) * 0.99)] * 1e3, 3),
            "bytes": len(body)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=2000, help="requests per route")
    a = ap.parse_args()
    started = provenance.start()
    tmp = TempDir()
    tmp.file("f.lua", FLOW)
    conf = "log_level warn;\nhttp { listen 127.0.0.1:@PORT@; }\nnats { url %s; }\n"
    nats = NatsServer(tmp)
    units = []
    for i in range(25):
        units.append("flow f%d { script %s/f.lua; source ev.in.%d; }" % (i, tmp.path, i))
        units.append("relay r%d { source ev.out.%d; to ev.done.%d; }" % (i, i, i))
    g = Gust(tmp, conf % nats.url + "\n".join(units) + "\n")
    try:
        for i in range(25):
            g.request("POST", "/ingest/in.%d" % i, json.dumps({"i": i}).encode())
        d = wait_for(lambda: (lambda d: len(d["edges"]) >= 25 + 25 and d)(
            json.loads(g.request("GET", "/topology")[1])), 30, "every edge")
        nodes = {n["id"] for n in d["nodes"]}
        wrong = []
        if len(nodes) != 50 + 2:
            wrong.append("%d nodes, not 52" % len(nodes))
        conn = http.client.HTTPConnection("127.0.0.1", g.port, timeout=10)
        timed(conn, "/livez", 200)  # warm up
        result = {"scenario": "topology", "units": 50, "requests": a.n,
                  "livez": timed(conn, "/livez", a.n),
                  "topology": timed(conn, "/topology", a.n),
                  "topology_no_spark": timed(conn, "/topology?spark=0", a.n)}
        conn.close()
        result["targets"] = {"topology_p50_ms_under": 1.0}
        result["met"] = result["topology"]["p50_ms"] < 1.0
    finally:
        g.stop()
        nats.stop()
        tmp.cleanup()
    provenance.emit("topology", result, BUILD, started, ok=not wrong)
    if wrong:
        sys.exit("topology: " + "; ".join(wrong))


if __name__ == "__main__":
    main()
