"""mqtt_out bounds what a broker may send it (issue 24, item 9): libmosquitto 2.0 takes a
packet of whatever size the broker announces (a PUBLISH claiming 268 MB grew gust by
hundreds of MB), so mqtt_out reads the broker's packets through a guard that refuses
one over its limit: the connection is dropped before the body comes in, the log says
why, memory stays flat, and the next connection delivers as usual."""
import json
import os
import socket
import struct

from fake_mqtt import DISCONNECT, PUBACK, PUBLISH, FakeBroker, packet, remaining
from gustlib import BUILD, Checks, Gust, NatsServer, TempDir, wait_for

CONF = """
plugin_dir %(plugins)s;
plugin mqtt;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; retry_delay 100ms; retry_max_delay 200ms; max_deliver 1000; }
sink out { use mqtt_out; source ev.out; broker %(broker)s; topic out/x; qos 1; timeout 2s; }
"""

CLAIM = 268435455  # the protocol's largest remaining length
SEND = 100 << 20


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    state = {"rss": [], "sent": 0, "delivered": []}

    def script(c):
        c.accept_connect()
        if c.broker.connections == 1:
            topic = b"in/huge"
            c.sock.sendall(bytes([0x30]) + remaining(CLAIM) + struct.pack("!H", len(topic)) + topic)
            chunk = b"x" * (1 << 20)
            try:
                for i in range(SEND >> 20):
                    c.sock.sendall(chunk)
                    state["sent"] += len(chunk)
                    if i % 5 == 0:
                        state["rss"].append(rss_kb(state["pid"]))
            except OSError:
                pass  # dropped by the client: what should happen
            state["rss"].append(rss_kb(state["pid"]))
            return
        while True:
            p = c.read(30)
            if p is None:
                return
            if p[0] == PUBLISH:
                qos = (p[1] >> 1) & 3
                n = struct.unpack("!H", p[2][:2])[0]
                pid = struct.unpack("!H", p[2][2 + n:4 + n])[0] if qos else 0
                state["delivered"].append(p[2][2 + n + (2 if qos else 0):])
                if qos:
                    c.send(packet(PUBACK, struct.pack("!H", pid)))

    broker = FakeBroker(script)
    g = Gust(tmp, CONF % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "broker": broker.addr},
             wait_healthy=False)
    state["pid"] = g.proc.pid
    try:
        wait_for(lambda: g.healthy(), 20, "gust healthy")
        base = rss_kb(g.proc.pid)
        wait_for(lambda: broker.connections >= 2, 60, "mqtt_out drops the connection and connects again")
        grown = max(state["rss"] + [rss_kb(g.proc.pid)]) - base
        print("sent %d MB of a PUBLISH claiming %d bytes; RSS grew by %d KiB" % (state["sent"] >> 20, CLAIM, grown))
        t.check(grown < 20000, "RSS grew by %d KiB while the broker sent a PUBLISH claiming 268 MB" % grown)
        t.check(state["sent"] < SEND, "the connection was dropped before the body came in (%d bytes sent)" %
                state["sent"])
        t.check("over the limit" in g.log(), "the log says why the connection was dropped")
        t.eq(g.request("POST", "/ingest/out", json.dumps({"n": 1}).encode())[0], 202, "ingest")
        wait_for(lambda: state["delivered"], 20, "the next connection delivers")
        t.eq([json.loads(b) for b in state["delivered"]], [{"n": 1}], "delivered once")
        t.check(g.proc.poll() is None, "gust still running")
        t.eq(g.stop(), 0, "clean exit")
        wait_for(lambda: DISCONNECT in [p[0] for p in broker.received], 5, "a DISCONNECT through the guard")
    finally:
        g.stop()
        nats.stop()
        if t.failed:
            print(g.log()[-3000:])
    t.done()


if __name__ == "__main__":
    main()
