"""A nats-server restart during ingest: 503s (never hangs) during the outage, 202s
after, and /healthz follows the bus."""
import threading
import time

from gustlib import Checks, Gust, NatsServer, TempDir, wait_for

CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; publish_timeout 2s; }
"""


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % nats.url)
    results = []
    stop = threading.Event()

    def load():
        i = 0
        while not stop.is_set():
            start = time.monotonic()
            try:
                status = g.request("POST", "/ingest/restart", b'{"i": %d}' % i, timeout=8)[0]
            except OSError as e:
                status = "error: %s" % e
            results.append((status, time.monotonic() - start, i))
            i += 1
            time.sleep(0.005)

    th = threading.Thread(target=load)
    th.start()
    try:
        wait_for(lambda: sum(1 for r in results if r[0] == 202) >= 50, 10, "202s before the outage")
        nats.kill()
        outage_start = len(results)
        wait_for(lambda: g.request("GET", "/healthz")[0] == 503, 5, "healthz 503 during the outage")
        wait_for(lambda: sum(1 for r in results[outage_start:] if r[0] == 503) >= 10, 10, "503s during outage")
        nats.start()
        wait_for(lambda: g.request("GET", "/healthz")[0] == 200, 15, "healthz 200 after the restart")
        after = len(results)
        wait_for(lambda: sum(1 for r in results[after:] if r[0] == 202) >= 50, 15, "202s after the restart")
    finally:
        stop.set()
        th.join()
    statuses = set(r[0] for r in results)
    t.check(statuses <= {202, 503}, "only 202 and 503 answers: %s" % statuses)
    slowest = max(r[1] for r in results)
    t.check(slowest < 3, "no request hung: slowest %.2f s" % slowest)
    accepted = [r[2] for r in results if r[0] == 202]
    # Every 202 is in the stream (it was stored before the answer).
    stored = nats.read_stream()
    stored_ids = set()
    import json
    for _, _, data in stored:
        stored_ids.add(json.loads(data)["i"])
    t.check(set(accepted) <= stored_ids, "every 202 is stored: missing %s" % sorted(set(accepted) - stored_ids)[:10])
    t.check(g.proc.poll() is None, "gust still running")
    g.stop()
    nats.stop()
    if t.failed:
        print(g.log()[-4000:])
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
