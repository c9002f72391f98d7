"""Idle units are cheap (issue 25, part 2): gust does not keep reading an idle unit's
consumer, and an idle unit still gets the next event as soon as it is stored.

Three flows, each fed one event, then left idle. A plain subscriber on the server counts
the JetStream API calls about their consumers and sees their emits:
- over 8 s of idleness gust reads each unit's consumer info at most twice (the retention
  pass read it 4 times a second); the pull requests are counted and printed (an idle
  unit asks twice a second: a longer idle request delayed noticing a frozen server);
- an event stored while the units are idle is emitted within 1 s, at three moments of
  the open requests' lives;
- a unit kept busy for 4 s has its consumer info read not once after its first second,
  and /units still shows its backlog;
- after nats-server is killed and started again (the open requests die with it), an
  idle unit asks again: an event is emitted within 2 s of gust being healthy;
- a stop takes well under 4 s."""
import json
import socket
import threading
import time

from gustlib import Checks, Gust, NatsServer, TempDir, kill_all, nats_publish, wait_for

UNITS = ("f1", "f2", "f3")
FLOW = """
return {
  source = "ev.%(u)s",
  on_event = function(ev) emit("ev.%(u)s.out", { id = ev.id }) end,
}
"""
CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; }
""" + "".join("flow %s { script %s.lua; }\n" % (u, u) for u in UNITS)
IDLE_WINDOW_S = 8
BUSY_S = 4.0


class Watcher:
    """A raw NATS subscriber on the units' pull requests and their emits: (monotonic time,
    subject) of each, in a thread, reconnecting when the server goes away."""

    def __init__(self, port):
        self.port = port
        self.seen = []
        self.lock = threading.Lock()
        self.running = True
        self.connected = threading.Event()
        self.sock = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while self.running:
            try:
                self.session()
            except OSError:
                pass
            self.connected.clear()
            time.sleep(0.1)

    def session(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
            s.settimeout(None)  # a read that timed out would leave the file unusable
            self.sock = s
            f = s.makefile("rb")
            f.readline()  # INFO
            s.sendall(b'CONNECT {"verbose":false}\r\nSUB $JS.API.CONSUMER.MSG.NEXT.GUST.> 1\r\n'
                      b'SUB ev.*.out 2\r\nSUB $JS.API.CONSUMER.INFO.GUST.> 3\r\nPING\r\n')
            while self.running:
                line = f.readline()
                if not line:
                    return
                if line.startswith(b"PING"):
                    s.sendall(b"PONG\r\n")
                elif line.startswith(b"PONG"):
                    self.connected.set()
                elif line.startswith(b"MSG"):
                    parts = line.split()
                    f.read(int(parts[-1]) + 2)
                    with self.lock:
                        self.seen.append((time.monotonic(), parts[1].decode()))

    def requests(self, unit, since, until, api="MSG.NEXT"):
        subject = "$JS.API.CONSUMER.%s.GUST.flow_%s" % (api, unit)
        with self.lock:
            return sum(1 for at, s in self.seen if s == subject and since <= at < until)

    def emitted(self, unit, since):
        """When the first emit of unit at or after since was seen, or None."""
        with self.lock:
            return next((at for at, s in self.seen if s == "ev.%s.out" % unit and at >= since), None)

    def stop(self):
        self.running = False
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # ends the blocking read
        except (AttributeError, OSError):
            pass
        self.thread.join(5)


def latency(watcher, nats, unit, ident):
    """Stores an event for unit (the raw publish's PONG: the server has it) and waits for
    its emit: seconds from the publish to the emit seen."""
    t0 = time.monotonic()
    nats_publish(nats.port, [("ev." + unit, b'{"id": %d}' % ident)])
    wait_for(lambda: watcher.emitted(unit, t0) is not None, 15, "the emit of %s's event %d" % (unit, ident))
    return watcher.emitted(unit, t0) - t0


def main():
    t = Checks()
    tmp = TempDir()
    for u in UNITS:
        tmp.file(u + ".lua", FLOW % {"u": u})
    nats = NatsServer(tmp)
    watcher = Watcher(nats.port)
    g = None
    try:
        t.check(watcher.connected.wait(10), "the watcher subscribed")
        g = Gust(tmp, CONF % nats.url)
        # Each unit works once, then goes idle.
        for i, u in enumerate(UNITS):
            latency(watcher, nats, u, i)
        time.sleep(1)
        since = time.monotonic()
        time.sleep(IDLE_WINDOW_S)
        counts = {u: watcher.requests(u, since, since + IDLE_WINDOW_S) for u in UNITS}
        print("pull requests of each idle unit in %d s: %r" % (IDLE_WINDOW_S, counts))
        t.check(all(n > 0 for n in counts.values()), "an idle unit keeps asking: %r" % counts)
        infos = {u: watcher.requests(u, since, since + IDLE_WINDOW_S, api="INFO") for u in UNITS}
        print("consumer info reads of each idle unit in %d s: %r" % (IDLE_WINDOW_S, infos))
        t.check(all(n <= 2 for n in infos.values()), "an idle unit's consumer is read at most twice: %r" % infos)

        # The first event after idleness, at three moments of the open requests' lives.
        late = []
        for i, u in enumerate(UNITS):
            late.append(round(latency(watcher, nats, u, 100 + i), 3))
            time.sleep(1.7)
        print("latency of an idle unit's first event (s): %r" % late)
        t.check(all(s < 1.0 for s in late), "an idle unit emits a new event within 1 s: %r" % late)

        # A busy unit's consumer is not read either (nats-server 2.9.10 then counts its
        # pending messages again for every delivery: retention.c), yet its backlog shows.
        t0 = time.monotonic()
        n = 0
        backlogs = []
        while time.monotonic() - t0 < BUSY_S:
            nats_publish(nats.port, [("ev.f1", b'{"id": %d}' % (1000 + n + k)) for k in range(20)])
            n += 20
            status, body, _ = g.request("GET", "/units")
            unit = next((x for x in json.loads(body)["units"] if x["name"] == "f1"), {}) if status == 200 else {}
            backlogs.append(unit.get("backlog"))
            time.sleep(0.05)
        busy = watcher.requests("f1", t0 + 1, t0 + BUSY_S, api="INFO")
        print("consumer info reads of a busy unit in %.0f s: %d (%d events); backlogs %r"
              % (BUSY_S - 1, busy, n, backlogs[-5:]))
        t.eq(busy, 0, "a busy unit's consumer info reads")
        t.check(all(isinstance(b, int) for b in backlogs[len(backlogs) // 2:]),
                "a busy unit's backlog is known: %r" % backlogs)
        wait_for(lambda: watcher.emitted("f1", t0) is not None, 15, "f1's emits")

        # A restart loses the open requests: the units ask again once reconnected.
        time.sleep(1)
        nats.kill()
        time.sleep(0.5)
        nats.start()
        wait_for(lambda: g.healthy(), 20, "gust healthy after the restart")
        t.check(watcher.connected.wait(10), "the watcher subscribed again")
        late = [round(latency(watcher, nats, u, 200 + i), 3) for i, u in enumerate(UNITS)]
        print("latency after the restart (s): %r" % late)
        t.check(all(s < 2.0 for s in late), "after a restart an idle unit emits within 2 s: %r" % late)

        time.sleep(1.5)  # idle once more
        t0 = time.monotonic()
        rc = g.stop()
        took = time.monotonic() - t0
        print("stop took %.2f s" % took)
        t.eq(rc, 0, "gust's exit status")
        t.check(took < 4.0, "idle units stop at once: %.2f s" % took)
    except Exception as e:  # any failure still ends with the processes stopped
        t.check(False, "%s: %s" % (type(e).__name__, e))
    watcher.stop()
    kill_all([g] if g is not None else [], nats, t.failed > 0)
    t.done()


if __name__ == "__main__":
    main()
