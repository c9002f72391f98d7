"""The mqtt plugin against hostile and broken brokers (issue 17, section 3), each a small
fake broker (fake_mqtt.py) that gets the client to a point and then misbehaves, with the
real gust and a real nats-server: a malformed packet after every CONNACK (the reconnects
back off), a QoS 2 PUBLISH (answered PUBREC, then PUBCOMP), SUBACKs that downgrade or
carry an invalid code, a PUBLISH of 100 MB against max_payload 1m (read past, memory
bounded, rejected and acknowledged, the next message stored); and for mqtt_out a malformed
packet after every CONNACK (it reconnects, backing off, where libmosquitto's own network
thread would stop for good), a broker that goes silent under a steady QoS 0 stream (what
mqtt_out writes is no sign of life from the broker: a PINGREQ goes out while the stream
goes on, the missing PINGRESP drops the connection, a new one is made), and one that reads
QoS 1 PUBLISHes and never acknowledges them (the batch gives up after `timeout`, and the
connection is dropped and made again). The process stays up throughout and nothing
accepted is lost."""
import os
import re
import struct
import time

from fake_mqtt import PINGREQ, PUBACK, PUBCOMP, PUBLISH, PUBREC, PUBREL, FakeBroker, packet, publish, remaining
from gustlib import BUILD, Checks, Gust, NatsServer, TempDir, wait_for

CONF = """
plugin_dir %(plugins)s;
plugin mqtt;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; retry_delay 100ms; retry_max_delay 200ms; max_deliver 1000; }
source garbage { use mqtt_in; broker %(garbage)s; topic g/#; subject ev.garbage; qos 1; }
source two { use mqtt_in; broker %(qos2)s; topic q/#; subject ev.qos2; qos 1; }
source down { use mqtt_in; broker %(down)s; topic d/#; subject ev.down; qos 1; }
source invalid { use mqtt_in; broker %(invalid)s; topic i/#; subject ev.invalid; qos 1; }
source big { use mqtt_in; broker %(big)s; topic b/#; subject ev.big; qos 1; max_payload 1m; }
sink garbled { use mqtt_out; source ev.garbled; broker %(garbage_out)s; topic out/g; qos 1; }
sink silent { use mqtt_out; source ev.silent; broker %(silent)s; topic out/x; qos 0; keepalive 5s; }
sink mute { use mqtt_out; source ev.mute; broker %(mute)s; topic out/m; qos 1; timeout 1s; }
"""

BIG = 100 << 20


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
    state = {"pubrec": None, "pubcomp": None, "acks": [], "rss": [], "big_sent": False, "silent": []}

    def garbage(c):
        c.accept_connect()
        c.send(b"\x30\xff\xff\xff\xff\x7f")  # a remaining length of five bytes
        c.read(5)

    def qos2(c):
        c.accept_connect()
        c.accept_subscribe([1])
        c.send(publish("q/x", b'{"q":2}', qos=2, pid=7))
        p = c.read_until(PUBREC)
        state["pubrec"] = p and struct.unpack("!H", p[2])[0]
        state["stored_at_pubrec"] = nats.count()
        c.send(packet(PUBREL, struct.pack("!H", 7), flags=2))
        p = c.read_until(PUBCOMP)
        state["pubcomp"] = p and struct.unpack("!H", p[2])[0]
        while c.read(30) is not None:
            pass

    def down(c):
        c.accept_connect()
        c.accept_subscribe([0])
        while c.read(30) is not None:
            pass

    def invalid(c):
        c.accept_connect()
        c.accept_subscribe([5])
        c.read(5)

    def big(c):
        c.accept_connect()
        c.accept_subscribe()
        topic = b"b/huge"
        var = struct.pack("!H", len(topic)) + topic + struct.pack("!H", 9)
        c.sock.sendall(bytes([0x32]) + remaining(len(var) + BIG) + var)  # PUBLISH, QoS 1
        chunk = b"x" * (1 << 20)
        for i in range(BIG >> 20):
            c.sock.sendall(chunk)
            if i % 10 == 0:
                state["rss"].append(rss_kb(state["pid"]))
        state["big_sent"] = True
        c.send(publish("b/ok", b'{"ok":1}', qos=1, pid=10))
        while len(state["acks"]) < 2:
            p = c.read(20)
            if p is None:
                return
            if p[0] == PUBACK:
                state["acks"].append(struct.unpack("!H", p[2])[0])
        while c.read(30) is not None:
            pass

    def silent(c):
        c.accept_connect()
        while c.read(60) is not None:
            pass

    def silent_recorded(c):  # silent, keeping each connection's packet types in order
        c.accept_connect()
        state["silent"].append(c.packets)
        while c.read(60) is not None:
            pass

    brokers = {name: FakeBroker(fn) for name, fn in
               [("garbage", garbage), ("qos2", qos2), ("down", down), ("invalid", invalid), ("big", big),
                ("garbage_out", garbage), ("silent", silent_recorded), ("mute", silent)]}
    conf = CONF % dict({k: b.addr for k, b in brokers.items()}, plugins=os.path.join(BUILD, "plugins"),
                       nats=nats.url)
    g = Gust(tmp, conf, wait_healthy=False)
    state["pid"] = g.proc.pid
    try:
        wait_for(lambda: g.healthy(), 20, "gust healthy")
        base_rss = rss_kb(g.proc.pid)

        # A malformed packet after each CONNACK: the delays between attempts double.
        def garbage_delays():
            return [int(x) for x in re.findall(r"\[source:garbage\] disconnected from [^\n]*reconnecting in (\d+) ms",
                                               g.log())]
        delays = wait_for(lambda: len(garbage_delays()) >= 5 and garbage_delays(), 20, "five reconnects")
        t.eq(delays[:5], [100, 200, 400, 800, 1600], "backoff after connections that fail at once")
        t.check("bad packet length" in g.log(), "the malformed length is named")

        # QoS 2: PUBREC once stored, PUBCOMP for the PUBREL.
        wait_for(lambda: state["pubcomp"] is not None, 20, "PUBREC and PUBCOMP")
        t.eq(state["pubrec"], 7, "PUBREC for packet 7")
        t.eq(state["stored_at_pubrec"] >= 1, True, "stored before the PUBREC")
        t.eq(state["pubcomp"], 7, "PUBCOMP for packet 7")
        stored = [m[2] for m in nats.read_stream() if m[1] == "ev.qos2"]
        t.eq(stored, [b'{"q":2}'], "the QoS 2 message stored once")

        # SUBACKs: a downgrade warns, an invalid code is a protocol error.
        wait_for(lambda: "[source:down] broker granted QoS 0 for d/#" in g.log(), 10, "downgrade warning")
        t.check(re.search(r"\[warn\] \[source:down\] broker granted QoS 0", g.log()), "at warn level")
        wait_for(lambda: "SUBACK return code 0x05" in g.log(), 10, "invalid SUBACK code named")
        t.check(re.search(r"\[warn\] \[source:invalid\] disconnected from .*SUBACK return code 0x05", g.log()),
                "invalid code drops the connection")

        # 100 MB against max_payload 1m: read past, acknowledged, the next one stored.
        wait_for(lambda: len(state["acks"]) == 2, 120, "both PUBACKs after the big message")
        t.eq(state["acks"], [9, 10], "the big one and the next acknowledged, in order")
        t.check(state["big_sent"], "the broker sent the whole 100 MB")
        grown = max(state["rss"] + [rss_kb(g.proc.pid)]) - base_rss
        t.check(grown < 20000, "RSS grew by %d KiB while 100 MB came in" % grown)
        t.check("payload of %d bytes over max_payload" % BIG in g.log(), "the rejection says why")
        wait_for(lambda: [m[2] for m in nats.read_stream() if m[1] == "ev.big"] == [b'{"ok":1}'], 10,
                 "the next message stored, the big one not")

        # mqtt_out and a malformed packet after each CONNACK: dropped, reconnected, backing off.
        def garbled_delays():
            return [int(x) for x in re.findall(r"\[sink:garbled\] disconnected from [^\n]*protocol error[^\n]*"
                                               r"reconnecting in (\d+) ms", g.log())]
        delays = wait_for(lambda: len(garbled_delays()) >= 4 and garbled_delays(), 20, "mqtt_out reconnecting")
        t.eq(delays[:4], [100, 200, 400, 800], "mqtt_out's backoff after connections that fail at once")
        t.check(brokers["garbage_out"].connections >= 4, "a new connection each time")

        # mqtt_out and a silent broker: its own steady writes do not keep the connection "up".
        dropped = "[sink:silent] disconnected from %s: no PINGRESP within the keepalive period" % brokers["silent"].addr
        statuses = []
        for i in range(150):  # about 30 s of events, 5 a second, until the drop
            if dropped in g.log():
                break
            statuses.append(g.request("POST", "/ingest/silent", b'{"n":%d}' % i)[0])
            time.sleep(0.2)
        t.eq(set(statuses), {202}, "events for the silent broker taken")
        t.check(dropped in g.log(), "the silent broker noticed")
        first = [p[0] for p in state["silent"][0]][1:]  # after the CONNECT
        t.check(PINGREQ in first, "a PINGREQ went out")
        pings = first.index(PINGREQ) if PINGREQ in first else len(first)
        t.check(PUBLISH in first[:pings] and PUBLISH in first[pings + 1:],
                "the stream went on before and after the PINGREQ: %s" % first)
        wait_for(lambda: brokers["silent"].connections >= 2, 10, "mqtt_out reconnects")

        # A broker that never PUBACKs: the batch gives up on the connection, and a new one is made.
        status, _, _ = g.request("POST", "/ingest/mute", b'{"n":2}')
        t.eq(status, 202, "event for the mute broker")
        wait_for(lambda: "[sink:mute] disconnected from %s: no PUBACK within the timeout (1000 ms)"
                 % brokers["mute"].addr in g.log(), 20, "the missing PUBACK gives up on the connection")
        wait_for(lambda: brokers["mute"].connections >= 2, 10, "mqtt_out reconnects to the mute broker")

        t.check(g.proc.poll() is None, "gust is alive")
        t.eq(g.request("GET", "/healthz")[0], 200, "and healthy")
        t.eq(g.stop(), 0, "clean exit")
    except AssertionError:
        print(g.log()[-6000:])
        raise
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        if t.failed:
            print(g.log()[-6000:])
        for b in brokers.values():
            b.stop()
        nats.stop()
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
