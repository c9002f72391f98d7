"""Health that tells the truth, and units that come back by themselves (issue 24, items 4
and 5, and the start-up of item 9):

- a reload during a 25 s SIGSTOP of nats-server: /healthz is not 200 at 12 s and 20 s
  into the freeze and names its causes; every unit runs again and handles events within
  10 s of the thaw, without a second SIGHUP; /healthz is never 200 while a unit is not
  running; /livez is 200 throughout; the units that had to retry show it (retries,
  last_error with its time) and are `running`, an idle detect unit included;
- a flow stuck in one batch past its timeout makes /healthz 503 (unit_stuck);
- a SIGTERM while JetStream is silent at start-up ends the process within 2 s, and a
  server that garbles the handshake (+OK before PONG) is retried, not fatal."""
import datetime
import json
import signal
import threading
import time

from gustlib import Checks, Gust, HttpSink, NatsServer, TempDir, wait_for
from natsproxy import NatsProxy

FLOW = """
return {
  source = "ev.in",
  on_event = function(ev) emit("ev.out", { id = ev.id }) end,
}
"""
PROGRAM = """
connector Bus = nats (url: "the host's bus")

event Order:
    id: int
    amount: float

stream Orders = Order.from(Bus, topic: "ev.shop.orders")

stream BigOrder = Orders
    .where(amount > 1000.0)
    .emit(id: id, amount: amount)
    .to(Bus, topic: "ev.alerts.big")
"""
CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; }
plugin http_out;
flow f { script f.lua; }
detect shop { rules shop.vpl; }
sink out { use http_out; source ev.out; url http://127.0.0.1:%(sink)d/hit; timeout 1s; }
"""
UNITS = {"f", "shop", "out"}


def wait_until(cond, timeout, what, every=0.2):
    """wait_for, without asking more often than `every` (reading the stream is a process)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(every)


def get(g, path, timeout=3):
    try:
        status, body, _ = g.request("GET", path, timeout=timeout)
        return status, json.loads(body) if body else None
    except (OSError, ValueError):
        return None, None


def post(g, path, body):
    try:
        return g.request("POST", path, body=body, timeout=5)[0]
    except OSError:
        return None


def units_of(g):
    status, body = get(g, "/units")
    return {u["name"]: u for u in body["units"]} if status == 200 else None


def all_running(units):
    return units is not None and set(units) == UNITS and all(u["state"] == "running" for u in units.values())


def causes(body):
    return sorted({c["cause"] for c in (body or {}).get("causes", [])})


def delivered(sink, nats, i):
    """Event i went through the flow to the sink, and order i through the detect unit."""
    got = any(json.loads(b).get("id") == i for b in sink.received())
    alerts = [json.loads(m[2]) for m in nats.read_stream() if m[1] == "ev.alerts.big"]
    return got and any(a.get("id") == i for a in alerts)


def send(g, i):
    """An event for the flow and the sink, and an order for the detect unit, retried until
    ingest takes them (just after a thaw its connection may still be coming back)."""
    for path, body in (("/ingest/in", b'{"id": %d}' % i), ("/ingest/shop.orders", b'{"id": %d, "amount": 5000.0}' % i)):
        wait_until(lambda: post(g, path, body) == 202, 20, "ingest %s %d" % (path, i))


def rfc3339(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)


class Poller:
    """/units, then /healthz, then /livez, every 200 ms in a thread, kept with their time."""

    def __init__(self, g):
        self.g = g
        self.samples = []
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while self.running:
            at = time.monotonic()
            hs, hb = get(self.g, "/healthz")
            units = units_of(self.g)
            ls, _ = get(self.g, "/livez")
            self.samples.append((at, hs, hb, units, ls))
            time.sleep(0.2)

    def stop(self):
        self.running = False
        self.thread.join(10)


def test_freeze_and_reload(t, tmp, nats, sink, g):
    st, body = get(g, "/healthz")
    t.eq((st, body), (200, {"status": "ok"}), "healthz at start")
    t.eq(get(g, "/livez"), (200, {"status": "alive"}), "livez at start")
    units = units_of(g)
    t.check(all_running(units), "every unit running at start: %r" % units)
    t.check(all(u.get("retries") == 0 and u.get("last_error") is None and u.get("last_error_at") is None for u in units.values()),
            "no retries nor error at start")
    send(g, 1)
    wait_until(lambda: delivered(sink, nats, 1), 15, "event 1 delivered before the freeze")

    poller = Poller(g)
    wall0 = datetime.datetime.now(datetime.timezone.utc)
    nats.proc.send_signal(signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        time.sleep(3)
        g.proc.send_signal(signal.SIGHUP)  # the reload: its units cannot be created now
        time.sleep(12 - (time.monotonic() - t0))
        st12, body12 = get(g, "/healthz")
        time.sleep(20 - (time.monotonic() - t0))
        st20, body20 = get(g, "/healthz")
        units20 = units_of(g)
        time.sleep(25 - (time.monotonic() - t0))
    finally:
        nats.proc.send_signal(signal.SIGCONT)
    thaw = time.monotonic()
    t.check(st12 == 503 and "bus" in causes(body12), "healthz 12 s into the freeze: %s %r" % (st12, body12))
    t.check(st20 == 503 and "bus" in causes(body20) and "unit_not_running" in causes(body20),
            "healthz 20 s into the freeze: %s %r" % (st20, body20))
    t.check(units20 is not None and set(units20) == UNITS, "every unit listed in the freeze: %r" % units20)
    t.check(units20 is not None and units20.get("f", {}).get("state") == "starting" and
            units20["f"].get("retries", 0) >= 1 and units20["f"]["last_error"],
            "the reloaded flow shows it is starting, with its retries and error: %r" % (units20 or {}).get("f"))

    wait_until(lambda: all_running(units_of(g)), 30, "every unit running after the thaw")
    running_after = time.monotonic() - thaw
    print("every unit running %.1f s after the thaw" % running_after)
    t.check(running_after <= 10, "every unit running %.1f s after the thaw (at most 10)" % running_after)
    send(g, 2)
    wait_until(lambda: delivered(sink, nats, 2), 30, "event 2 delivered after the thaw")
    handled_after = time.monotonic() - thaw
    print("events handled %.1f s after the thaw" % handled_after)
    t.check(handled_after <= 12, "events handled %.1f s after the thaw (10 s, and 2 s to send and see them)"
            % handled_after)
    wait_until(lambda: get(g, "/healthz")[0] == 200, 15, "healthz 200 again")
    time.sleep(1)
    poller.stop()

    units = units_of(g)
    t.eq(units_of(g)["f"]["state"], "running", "the flow recovered to running")
    f = units["f"]
    t.check(f.get("retries", 0) >= 1 and f.get("last_error"), "the flow keeps its retries and last error: %r" % f)
    if f.get("last_error_at"):
        at = rfc3339(f["last_error_at"])
        t.check(wall0 <= at <= datetime.datetime.now(datetime.timezone.utc),
                "last_error_at %s is in the freeze" % f["last_error_at"])
    else:
        t.check(False, "the flow's last_error_at is set")
    t.eq(units["shop"]["state"], "running", "the detect unit is running again after the blip")
    t.eq(g.request("GET", "/units")[0], 200, "units readable")
    body = json.loads(g.request("GET", "/units")[1])
    t.check(body["generation"] == 2 and body["last_reload_error"] is None,
            "one SIGHUP made generation 2, no reload error: %r" % {k: body[k] for k in ("generation", "reload_count")})

    # A unit may be other than running for the grace (5 s) before healthz counts it.
    lies, last_all = [], None
    for at, hs, _, units, _ in poller.samples:
        if all_running(units):
            last_all = at
        elif hs == 200 and (last_all is None or at - last_all > 6):
            lies.append((round(at - t0, 1), {n: u["state"] for n, u in (units or {}).items()}))
    t.check(not lies, "healthz never 200 while a unit is not running (past the grace): %r" % lies[:3])
    frozen_200 = [round(at - t0, 1) for at, hs, _, _, _ in poller.samples if hs == 200 and 10 <= at - t0 <= 25]
    t.check(not frozen_200, "healthz never 200 from 10 s into the freeze to the thaw: %r" % frozen_200)
    livez = [(round(at - t0, 1), ls) for at, _, _, _, ls in poller.samples if ls != 200]
    t.check(not livez, "livez 200 throughout: %r" % livez[:5])
    t.check(len(poller.samples) >= 50, "%d samples" % len(poller.samples))


STUCK_FLOW = """
return {
  source = "ev.slow",
  on_event = function(ev)
    -- A C-level pattern match: the timeout's instruction hook never fires in it.
    string.find(string.rep("a", 5000), ".-.-.-.-b")
  end,
}
"""


def test_stuck(t, tmp, nats):
    """A flow whose handler stays in its batch well past its timeout (a script the
    timeout cannot reach, as item 2 shows): healthz says unit_stuck."""
    tmp.file("slow.lua", STUCK_FLOW)
    conf = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; }
flow slow { script slow.lua; timeout 100ms; }
""" % nats.url
    g = Gust(tmp, conf)
    try:
        t.eq(post(g, "/ingest/slow", b'{"x": 1}'), 202, "stuck: ingest")
        t0 = time.monotonic()

        def stuck():
            st, body = get(g, "/healthz")
            return st == 503 and "unit_stuck" in causes(body)
        ok = True
        try:
            wait_until(stuck, 20, "healthz unit_stuck")
        except AssertionError:
            ok = False
        t.check(ok, "stuck: healthz names unit_stuck (%.1f s)" % (time.monotonic() - t0))
        t.eq(get(g, "/livez")[0], 200, "stuck: livez 200")
    finally:
        if t.failed:
            print(g.log()[-2000:])
        g.proc.kill()
        g.proc.wait(10)


def test_startup(t, tmp, nats):
    # JetStream silent: every answer to gust's JetStream connection dropped.
    proxy = NatsProxy(nats.port)
    proxy.msg_rewrite["gust-now"] = lambda frame: b""
    conf = "http { listen 127.0.0.1:@PORT@; }\nnats { url %s; }\n" % proxy.url
    g = Gust(tmp, conf, wait_healthy=False)
    try:
        wait_for(lambda: "trying again" in g.log(), 20, "the start waiting for JetStream")
        time.sleep(1)
        t.check(g.proc.poll() is None, "silent JetStream: gust still starting")
        t0 = time.monotonic()
        g.proc.send_signal(signal.SIGTERM)
        try:
            g.proc.wait(10)
        except Exception:
            pass
        took = time.monotonic() - t0
        t.check(took <= 2, "SIGTERM while starting: exited in %.2f s" % took)
        t.eq(g.proc.returncode, 0, "SIGTERM while starting: exit status")
        t.check("SIGTERM: stopping" in g.log(), "SIGTERM while starting: the log says stopping")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait(10)
        if t.failed:
            print(g.log()[-2000:])
        proxy.close()

    # A handshake garbled for the first connections (+OK before PONG, an INFO without
    # its line end): tried again, not fatal.
    for what, rewrite in (("+OK before PONG", "pong_rewrite"), ("INFO without line end", "info_rewrite")):
        proxy = NatsProxy(nats.port)
        garbled = [0]

        def garble(frame):
            garbled[0] += 1
            if garbled[0] > 3:
                return frame
            return b"+OK\r\n" + frame if frame.startswith(b"PONG") else frame.rstrip(b"\r\n")
        setattr(proxy, rewrite, garble)
        conf = "http { listen 127.0.0.1:@PORT@; }\nnats { url %s; }\n" % proxy.url
        g = Gust(tmp, conf, wait_healthy=False)
        try:
            ok = True
            try:
                wait_until(lambda: g.healthy(), 30, "healthy after a garbled handshake")
            except AssertionError as e:
                ok = False
                print(e)
            t.check(ok, "%s at start: retried, then healthy (%d garbled)" % (what, garbled[0]))
        finally:
            if t.failed:
                print(g.log()[-2000:])
            if g.proc.poll() is None:
                g.stop()
            proxy.close()


def run(t, test, *args):
    """A test that times out waiting is a failed check; the next test still runs."""
    try:
        test(t, *args)
    except AssertionError as e:
        t.check(False, "%s: %s" % (test.__name__, e))


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("f.lua", FLOW)
    tmp.file("shop.vpl", PROGRAM)
    nats = NatsServer(tmp)
    sink = HttpSink()
    g = Gust(tmp, CONF % {"nats": nats.url, "sink": sink.port})
    try:
        run(t, test_freeze_and_reload, tmp, nats, sink, g)
        t.eq(g.stop(), 0, "clean stop")
    finally:
        if nats.proc is not None and nats.proc.poll() is None:
            nats.proc.send_signal(signal.SIGCONT)
        if t.failed:
            print(g.log()[-6000:])
        if g.proc.poll() is None:
            g.proc.kill()
        sink.close()
    run(t, test_stuck, tmp, nats)
    run(t, test_startup, tmp, nats)
    nats.stop()
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
