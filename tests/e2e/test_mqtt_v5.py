"""mqtt_in with `mqtt_version 5` (issue 28 item 4): a W3C traceparent and tracestate sent
as MQTT 5.0 user properties by a publisher on a real mosquitto reach a flow and then
http_out's request with the same trace id; a user property named in `headers` reaches
the flow in meta.headers, one not named does not. Against a fake 5.0 broker: CONNECT
says level 5, Receive Maximum and Topic Alias Maximum 0; the broker's Server Keep Alive
is taken; a QoS 1 message is PUBACKed (reason code 0) only once it is stored; a rejected
one gets reason code 0x99; a PUBLISH with a topic alias closes the connection with a
DISCONNECT of reason code 0x94 and a clear log line. With the bus down, a kill -9 of gust
loses nothing: the broker held every message not PUBACKed and sends it again, user
properties and all. Bad settings: file:line."""
import base64
import json
import os
import socket
import struct

from fake_mqtt import CONNACK, CONNECT, DISCONNECT, PUBACK, SUBACK, SUBSCRIBE, FakeBroker, packet, remaining
from gustlib import (BUILD, Checks, FarEnd, Gust, Mosquitto, NatsServer, TempDir, check_config_errors, js_api,
                     kill_all, wait_for)

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
TP = "00-%s-%s-01" % (TRACE, PARENT)

FLOW = """
return {
  source = "ev.v5.in",
  on_event = function(ev, meta)
    emit("ev.v5.out", { n = ev.n, device = meta.headers["x-device"], other = meta.headers["x-other"] or "none" })
  end,
}
"""

CONF = """
plugin_dir %(plugins)s;
plugin mqtt;
plugin http_out;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; }
source v5 { use mqtt_in; broker %(broker)s; topic v5/#; subject ev.v5.in; qos 1; mqtt_version 5; headers X-Device;
            competing on; }
flow fwd { script %(flow)s; }
sink far { use http_out; source ev.v5.out; url http://127.0.0.1:%(far)d/x; }
source fake { use mqtt_in; broker %(fake)s; topic f/#; subject ev.v5.fake; qos 1; mqtt_version 5; }
"""


def utf8(s):
    b = s.encode()
    return struct.pack("!H", len(b)) + b


def user_prop(name, value):
    return b"\x26" + utf8(name) + utf8(value)


def publish5(topic, payload, pid, props):
    """A QoS 1 PUBLISH of MQTT 5.0."""
    return packet(3, utf8(topic) + struct.pack("!H", pid) + remaining(len(props)) + props + payload, 2)


def read_packet(sock):
    """(type, body) of the next packet on a blocking socket."""
    def exactly(n):
        b = b""
        while len(b) < n:
            chunk = sock.recv(n - len(b))
            assert chunk, "connection closed"
            b += chunk
        return b
    first = exactly(1)[0]
    n, mult = 0, 1
    while True:
        d = exactly(1)[0]
        n += (d & 0x7f) * mult
        mult *= 128
        if not d & 0x80:
            break
    return first >> 4, exactly(n)


def v5_publish(port, topic, payload, props):
    """A real MQTT 5.0 client: CONNECT, one QoS 1 PUBLISH with user properties, its PUBACK."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        body = utf8("MQTT") + bytes([5, 0x02]) + struct.pack("!H", 30) + remaining(0) + utf8("test-v5-pub")
        s.sendall(packet(CONNECT, body))
        t, b = read_packet(s)
        assert t == CONNACK and b[1] == 0, (t, b)
        s.sendall(publish5(topic, payload, 1, props))
        t, b = read_packet(s)
        assert t == PUBACK and b[:2] == b"\x00\x01", (t, b)
        s.sendall(packet(DISCONNECT, b"\x00"))
    finally:
        s.close()


def stored(nats, subject):
    return [m for m in nats.read_stream() if m[1] == subject]


def headers_of(nats, seq):
    msg = js_api(nats.port, "STREAM.MSG.GET.GUST", {"seq": seq})["message"]
    return base64.b64decode(msg["hdrs"]).decode() if msg.get("hdrs") else ""


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    broker = Mosquitto(tmp)
    far = FarEnd()
    state = {}

    def fake(c):
        p = c.read()
        assert p is not None and p[0] == CONNECT, p
        if "connect" in state:  # a later connection (after the topic alias): just stay
            c.send(packet(CONNACK, b"\x00\x00\x00"))
            while c.read(30) is not None:
                pass
            return
        state["connect"] = p[2]
        c.send(packet(CONNACK, b"\x00\x00\x03\x13\x00\x07"))  # Server Keep Alive 7 s
        p = c.read_until(SUBSCRIBE)
        c.send(packet(SUBACK, p[2][:2] + b"\x00\x01"))
        c.send(publish5("f/a", b'{"n": 1}', 5, user_prop("traceparent", TP) + user_prop("X-Device", "fake")))
        p = c.read_until(PUBACK)
        state["stored_at_ack"] = len(stored(nats, "ev.v5.fake"))
        state["ack"] = p and p[2]
        c.send(publish5("f/b", b"not json", 6, b""))
        p = c.read_until(PUBACK)
        state["reject_ack"] = p and p[2]
        c.send(publish5("f/c", b"{}", 7, b"\x23\x00\x01"))  # Topic Alias 1: never allowed
        p = c.read_until(DISCONNECT)
        state["disconnect"] = p and p[2]

    fb = FakeBroker(fake)
    procs = []
    try:
        check_config_errors(t, tmp, nats, "mqtt", [
            ("source s { use mqtt_in; broker 127.0.0.1:1; topic a; subject ev.a; headers X-A; }",
             "headers needs mqtt_version 5 (MQTT 3.1.1 has no user properties)"),
            ("source s { use mqtt_in; broker 127.0.0.1:1; topic a; subject ev.a; mqtt_version 4; }", "3.1.1|5"),
        ], "-t")
        conf = CONF % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "broker": broker.addr,
                       "flow": tmp.file("fwd.lua", FLOW), "far": far.port, "fake": fb.addr}
        g = Gust(tmp, conf)
        procs.append(g)
        wait_for(lambda: "[source:v5] subscribed to v5/#" in g.log(), 10, "mqtt_in (MQTT 5) subscribed")
        t.check("[source:v5] connected to %s as gust-source-v5 (persistent session, MQTT 5)" % broker.addr in g.log(),
                "connected with MQTT 5")

        # 1. Trace context through a real broker, a flow and http_out.
        props = (user_prop("traceparent", TP) + user_prop("tracestate", "congo=t61rcWkgMzE") +
                 user_prop("X-Device", "d-7") + user_prop("X-Other", "not kept"))
        v5_publish(broker.port, "v5/a", b'{"n": 7}', props)
        got = wait_for(lambda: stored(nats, "ev.v5.in"), 10, "the event stored")
        hdrs = headers_of(nats, got[0][0])
        t.check("traceparent: %s" % TP in hdrs and "tracestate: congo=t61rcWkgMzE" in hdrs,
                "the event keeps traceparent and tracestate: %r" % hdrs)
        t.check("X-Device: d-7" in hdrs and "X-Other" not in hdrs, "only the listed user property: %r" % hdrs)
        wait_for(lambda: far.requests(), 15, "http_out's request")
        req = far.requests()[0]
        body = req.body
        tp = req.headers.get("traceparent", "")
        t.check(tp.startswith("00-%s-" % TRACE) and PARENT not in tp,
                "http_out sends a child traceparent of the publisher's trace: %r" % tp)
        t.eq(json.loads(body), {"n": 7, "device": "d-7", "other": "none"}, "the flow read the kept header")

        # 2. The fake 5.0 broker.
        wait_for(lambda: "disconnect" in state, 15, "the fake broker's script")
        c = state["connect"]
        t.eq(c[6], 5, "CONNECT: protocol level 5")
        t.check(b"\x21\x04\x00" in c and b"\x22\x00\x00" in c and b"\x11\xff\xff\xff\xff" in c,
                "CONNECT: Receive Maximum (max_inflight 1024), Topic Alias Maximum 0, a session that outlives the "
                "connection: %r" % c)
        t.eq(state["ack"], b"\x00\x05\x00", "PUBACK of the stored message: its id, reason code 0")
        t.check(state["stored_at_ack"] >= 1, "PUBACKed only once stored")
        t.eq(state["reject_ack"], b"\x00\x06\x99", "PUBACK of a rejected message: reason code 0x99")
        t.eq(state["disconnect"], b"\x94", "a topic alias: DISCONNECT with reason code 0x94")
        # The fake broker has the DISCONNECT before gust writes its log line: wait for it.
        alias = "[source:fake] disconnected from %s: protocol error: a PUBLISH with a topic alias" % fb.addr
        t.check(wait_for(lambda: alias in g.log(), 5, "the topic alias logged"), "the topic alias logged")
        log = g.log()
        t.check("keepalive 7s as the broker asks" in log, "Server Keep Alive taken")
        fake_hdrs = headers_of(nats, stored(nats, "ev.v5.fake")[0][0])
        t.check("traceparent: %s" % TP in fake_hdrs and "X-Device" not in fake_hdrs,
                "trace context kept without a headers key: %r" % fake_hdrs)

        # 3. The bus down, then kill -9: nothing was PUBACKed, so the broker sends it all again.
        nats.stop()
        for i in range(3):
            v5_publish(broker.port, "v5/b", b'{"n": %d}' % (100 + i), user_prop("traceparent", TP))
        wait_for(lambda: "[source:v5] publish failed" in g.log(), 20, "the failed publish")
        g.proc.kill()
        g.proc.wait(10)
        nats.start()
        g = Gust(tmp, conf)
        procs.append(g)
        def after_crash():  # at least once: a repeat would be no loss
            return [m for m in stored(nats, "ev.v5.in") if json.loads(m[2])["n"] >= 100]
        wait_for(lambda: {json.loads(m[2])["n"] for m in after_crash()} == {100, 101, 102}, 30,
                 "every message sent again after the crash and stored")
        t.check(all("traceparent: %s" % TP in headers_of(nats, m[0]) for m in after_crash()),
                "their traceparent kept across the redelivery")
        t.eq(g.stop(), 0, "clean stop")
    finally:
        kill_all(procs, nats, failed=t.failed > 0)
        broker.stop()
        fb.stop()
        far.close()
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
