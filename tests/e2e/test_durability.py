"""Nothing accepted is lost: kill -9 of gust in the middle of 20 000 events, then a
restart; and a nats-server restart in the middle of the stream. Every id reaches the
sink at least once; duplicates are counted and reported."""
import json
import os
import signal
import time

from gustlib import SOURCE_DIR, BUILD, Checks, CountingSink, Gust, NatsServer, TempDir, nats_publish, wait_for

N = 20000
CONF = """
plugin_dir %(plugins)s;
plugin http_out;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; ack_wait 2s; }
flow orders { script %(src)s/scripts/bench_orders.lua; source ev.orders; }
sink out { use http_out; source ev.orders.out; url http://127.0.0.1:%(sink)d/hit; }
"""


def events(first, count):
    out = []
    for i in range(first, first + count):
        ev = {"id": "SO#%d" % i, "email": "a@b.c", "total_price": "1.00", "t": 1764400000000,
              "shipping_address": {"country": "Italy"},
              "line_items": [{"sku": "A", "quantity": "1", "unit_price_cents": 100}]}
        out.append(("ev.orders", json.dumps(ev).encode()))
    return out


def run(t, tmp, what, disrupt):
    nats = NatsServer(tmp)
    sink = CountingSink(tmp)
    conf = CONF % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "src": SOURCE_DIR, "sink": sink.port}
    g = Gust(tmp, conf)
    ok = False
    try:
        for first in range(0, N, 2000):
            nats_publish(nats.port, events(first, 2000))
        wait_for(lambda: sink.stats()["unique"] >= N // 4, 60, what + ": a quarter delivered")
        g = disrupt(g, nats, conf)
        wait_for(lambda: sink.stats()["unique"] >= N, 120, what + ": every id delivered")
        s = sink.stats()
        t.eq(s["unique"], N, what + ": unique ids at the sink")
        print("%s: delivered %d unique, %d duplicates" % (what, s["unique"], s["duplicates"]))
        t.eq(g.stop(), 0, what + ": clean stop")
        ok = True
    finally:
        if t.failed or not ok:
            print("sink:", sink.stats())
            try:
                print("units:", g.request("GET", "/units")[1].decode())
            except OSError as e:
                print("units: %s" % e)
            print(g.log()[-3000:])
        if g.proc.poll() is None:
            g.proc.kill()
        sink.stop()
        nats.stop()


def kill_and_restart(g, nats, conf):
    g.proc.send_signal(signal.SIGKILL)
    g.proc.wait()
    return Gust(g.tmp, conf, port=g.port)


def restart_nats(g, nats, conf):
    nats.kill()
    time.sleep(1)
    nats.start()
    return g


def main():
    t = Checks()
    tmp = TempDir()
    run(t, tmp, "kill -9 of gust", kill_and_restart)
    run(t, tmp, "nats-server restart", restart_nats)
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
