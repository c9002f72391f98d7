"""The mqtt plugin against a real mosquitto and nats-server: QoS 1 in -> Lua flow -> QoS 1
out with every message checked at a subscriber; kill -9 of gust mid-stream, a broker
restart mid-stream and the bus going away under mqtt_in lose nothing; non-JSON payloads and awkward topics get their
configured treatment; wrong credentials give a clear error and never show the secret;
bad settings are refused with file:line."""
import json
import os
import re
import signal
import subprocess
import time

from gustlib import (BUILD, Checks, Gust, Mosquitto, NatsServer, TempDir, check_config_errors, nats_publish,
                     plugin_check, wait_for)

PUB = os.path.join(BUILD, "bench", "gust-mqtt-pub")
SUB = os.path.join(BUILD, "bench", "gust-mqtt-sub")

FWD = """
-- forwards every event unchanged
return {
  source = "ev.mqtt.in",
  on_event = function(ev) emit("ev.mqtt.out", ev) end,
}
"""

CONF = """
plugin_dir %(plugins)s;
plugin mqtt;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; ack_wait 3s; }
source min { use mqtt_in; broker %(broker)s; topic in/#; subject ev.mqtt.in; qos 1; keepalive 5s; }
flow fwd { script %(tmp)s/fwd.lua; }
sink mout { use mqtt_out; source ev.mqtt.out; broker %(broker)s; topic_from_subject on;
            topic_strip ev.mqtt; topic_prefix gust/; qos 1; timeout 2s; }
source rej { use mqtt_in; broker %(broker)s; topic bad/reject; subject ev.bad.reject; non_json reject; }
source wrap { use mqtt_in; broker %(broker)s; topic bad/wrap/#; subject_prefix ev.wrapped; non_json wrap; }
"""


class Sub:
    """gust-mqtt-sub in the background: waits until it is subscribed."""

    def __init__(self, broker, filt, n, start, timeout=90, client_id="test-sub", printing=False, cafile=None):
        args = [SUB, "127.0.0.1", str(broker.port), filt, str(n), str(timeout), "--start", str(start),
                "--id", client_id] + (["--cafile", cafile] if cafile else [])
        self.proc = subprocess.Popen(args + (["--print"] if printing else []), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        assert line.strip() == "ready", "subscriber: " + line

    def result(self):
        out, _ = self.proc.communicate(timeout=120)
        lines = out.strip().split("\n")
        return json.loads(lines[-1]), lines[:-1]


def pub(broker, topic, n, start=0, body=None, wait=True, cafile=None):
    args = [PUB, "127.0.0.1", str(broker.port), topic, str(n), "--start", str(start), "--window", "200"]
    args += ["--cafile", cafile] if cafile else []
    if body is not None:
        args += ["--body", body]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    if wait:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0, "publisher: " + out
    return p


def sink_ok(g):
    units = json.loads(g.request("GET", "/units")[1])["units"]
    return next(u["events_ok"] for u in units if u["name"] == "mout")


def check_all(t, res, n, what, lines=None, start=0, earlier=()):
    """earlier: the [from, to) id ranges of the phases before, whose messages may come
    again late (at least once: what a killed gust sent but had not acked is sent again
    after ack_wait); lines: what the subscriber printed, to tell those from strangers."""
    t.eq(res["unique"], n, what + ": every message arrives")
    t.eq(res["missing"], 0, what + ": none missing")
    if lines is None:
        t.eq(res["foreign"], 0, what + ": nothing unexpected")
    else:
        ids = [json.loads(line.split(" ", 1)[1]).get("id", -1) for line in lines]
        strangers = [i for i in ids if not start <= i < start + n and not any(a <= i < b for a, b in earlier)]
        t.eq(strangers, [], what + ": nothing that was never sent (late copies of earlier phases: %d)" %
             (len(ids) - len(strangers) - res["unique"] - res["duplicates"]))
    print("%s: %d unique, %d duplicates, %d out of order" % (what, res["unique"], res["duplicates"],
                                                           res["out_of_order"]), flush=True)


def test_pipeline(t, tmp, nats, broker, conf):
    g = Gust(tmp, conf)
    try:
        wait_for(lambda: "[source:min] subscribed to in/#" in g.log(), 10, "mqtt_in subscribed")
        wait_for(lambda: "[sink:mout] connected to" in g.log(), 10, "mqtt_out connected")
        t.check("TLS" not in g.log(), "plain TCP by default")

        # 1. QoS 1 in -> flow -> QoS 1 out: every message, payloads intact, in order.
        sub = Sub(broker, "gust/#", 2000, 0, printing=True)
        pub(broker, "in/sensors/a", 2000)
        res, lines = sub.result()
        check_all(t, res, 2000, "pipeline")
        t.eq(res["duplicates"], 0, "pipeline: no duplicates without failures")
        t.eq(res["out_of_order"], 0, "pipeline: in order")
        topic, payload = lines[7].split(" ", 1)
        t.eq(topic, "gust/out", "topic from the subject (strip ev.mqtt, prefix gust/)")
        t.eq(json.loads(payload), {"id": 7, "device": "d7", "v": 49}, "payload through the flow unchanged")

        # 2. kill -9 mid-stream, restart: the broker redelivers what was not PUBACKed.
        n, start = 20000, 100000
        sub = Sub(broker, "gust/#", n, start, client_id="test-sub-kill")
        p = pub(broker, "in/sensors/b", n, start, wait=False)
        base = sink_ok(g)
        wait_for(lambda: sink_ok(g) - base >= 1500, 30, "the stream to be flowing")
        g.proc.send_signal(signal.SIGKILL)
        g.proc.wait(10)
        t.check(sink_ok_safe(g) is None, "gust is gone")
        g = Gust(tmp, conf)
        p.communicate(timeout=120)
        t.eq(p.returncode, 0, "publisher finished across the crash")
        res, _ = sub.result()
        check_all(t, res, n, "kill -9 mid-stream")

        # 3. Broker restart mid-stream: both sides reconnect; the persistent sessions keep
        # what gust had not acknowledged.
        n, start = 8000, 200000
        sub = Sub(broker, "gust/#", n, start, client_id="test-sub-restart", printing=True)
        base = sink_ok(g)
        pub(broker, "in/sensors/c", n // 2, start)
        # The broker has the first half; gust is usually still delivering it (a fast run
        # may have caught up already, which still tests both reconnects and the second
        # half). Measured after the publisher is done, not before: sink_ok only grows.
        print("broker restart with %d of %d delivered" % (sink_ok(g) - base, n // 2), flush=True)
        broker.stop()
        broker.start()
        wait_for(lambda: g.log().count("[source:min] subscribed to in/#") >= 2, 30, "mqtt_in back")
        pub(broker, "in/sensors/c", n // 2, start + n // 2)
        res, lines = sub.result()
        check_all(t, res, n, "broker restart mid-stream", lines, start, earlier=[(0, 2000), (100000, 120000)])
        log = g.log()
        t.check("[source:min] disconnected from %s" % broker.addr in log, "mqtt_in logs the loss")
        t.check("[sink:mout] disconnected from %s" % broker.addr in log, "mqtt_out logs the loss")

        # 4. Payload policy: reject is counted and logged, wrap carries the bytes; topic
        # levels a subject token cannot hold are escaped.
        for i in range(3):
            pub(broker, "bad/reject", 1, body="not json %d" % i)
        pub(broker, "bad/reject", 1, start=5)
        pub(broker, "bad/wrap/room 1/t.c", 1, body="hello")
        pub(broker, "bad/wrap/x", 1, start=9)

        def stored():
            return [(s, d) for _, s, d in nats.read_stream() if s.startswith(("ev.bad.", "ev.wrapped."))]
        got = wait_for(lambda: len(stored()) >= 3 and stored(), 10, "bad-payload units to publish")
        # rej and wrap are two clients: only each one's own messages keep their order.
        rejected = [x for x in got if x[0].startswith("ev.bad.")]
        wrapped = [x for x in got if x[0].startswith("ev.wrapped.")]
        t.eq(rejected, [("ev.bad.reject", b'{"id":5,"device":"d5","v":35}')], "valid JSON passes reject as-is")
        t.eq(len(wrapped), 2, "both wrap messages stored")
        if len(wrapped) == 2:
            t.eq(wrapped[0][0], "ev.wrapped.bad.wrap.room%201.t%2Ec", "topic -> subject with escapes")
            t.eq(json.loads(wrapped[0][1]), {"payload_base64": "aGVsbG8=", "topic": "bad/wrap/room 1/t.c"},
                 "non-JSON wrapped")
            t.eq(wrapped[1], ("ev.wrapped.bad.wrap.x", b'{"id":9,"device":"d9","v":63}'), "JSON passes wrap as-is")
        t.eq(len(got), 3, "rejected payloads are not stored")
        log = g.log()
        t.check("[source:rej] rejected a message on topic bad/reject: payload is not a JSON object "
                "(non_json reject) (3 rejected so far)" in log, "rejections are logged and counted")
        t.eq(g.stop(), 0, "clean stop")
        t.check("[source:rej] stopped: 4 received, 1 stored, 3 rejected" in g.log(), "counters at stop")
    except AssertionError:
        print(g.log()[-6000:])
        raise
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        if t.failed:
            print(g.log()[-6000:])


def sink_ok_safe(g):
    try:
        return sink_ok(g)
    except OSError:
        return None


def test_credentials(t, tmp, nats):
    broker = Mosquitto(tmp, users={"gust": "right-pass"})
    tmp.file("wrong.pw", "wrong-secret-1\n")
    tmp.file("right.pw", "right-pass\n")
    conf = """
plugin_dir %(plugins)s;
plugin mqtt;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; }
source badin { use mqtt_in; broker %(broker)s; topic x; subject ev.auth; username gust; password_file %(tmp)s/wrong.pw; }
sink badout { use mqtt_out; source ev.never; broker %(broker)s; topic y; username gust; password ${MQTT_PW}; }
source goodin { use mqtt_in; broker %(broker)s; topic x; subject ev.auth; username gust; password_file %(tmp)s/right.pw; }
""" % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "broker": broker.addr, "tmp": tmp.path}
    g = Gust(tmp, conf, env={"MQTT_PW": "wrong-secret-2"})
    try:
        want = "broker %s refused the connection: not authorized (CONNACK 5); check username and password" % broker.addr
        wait_for(lambda: "[source:badin] " + want in g.log(), 10, "mqtt_in's refusal")
        wait_for(lambda: "[sink:badout] " + want in g.log(), 10, "mqtt_out's refusal")
        wait_for(lambda: "[source:goodin] connected to" in g.log(), 10, "right credentials connect")
        t.check("wrong-secret" not in g.log() and "right-pass" not in g.log(), "passwords never logged")
    finally:
        g.stop()
        broker.stop()
        if t.failed:
            print(g.log()[-3000:])


def make_certs(tmp):
    """A CA and a server certificate for 127.0.0.1 (an IP entry), with openssl(1)."""
    d = tmp.path

    def ssl(*args):
        subprocess.run(["openssl"] + list(args), check=True, capture_output=True, cwd=d)
    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=gust test CA")
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1")
    ssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.crt", "-days", "2", "-copy_extensions", "copy")
    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out", "other.crt", "-days", "2",
        "-subj", "/CN=another CA")
    return [os.path.join(d, f) for f in ("ca.crt", "server.crt", "server.key", "other.crt")]


def test_tls(t, tmp, nats):
    """mqtt_in's own TLS client and mqtt_out's libmosquitto one against a TLS listener;
    a CA that did not sign the broker's certificate is a clear error, for either, and
    neither gives up on the broker over it."""
    ca, cert, key, other = make_certs(tmp)
    broker = Mosquitto(tmp, tls=(ca, cert, key))
    conf = """
plugin_dir %(plugins)s;
plugin mqtt;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; }
source tin { use mqtt_in; broker %(broker)s; topic tls/in; subject ev.tls.in; tls_ca %(ca)s; }
sink tout { use mqtt_out; source ev.tls.in; broker %(broker)s; topic tls/out; tls_ca %(ca)s; }
source tbad { use mqtt_in; broker %(broker)s; topic tls/in; subject ev.tls.bad; tls_ca %(other)s; }
sink toutbad { use mqtt_out; source ev.tls.never; broker %(broker)s; topic tls/never; tls_ca %(other)s; }
""" % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "broker": broker.addr, "ca": ca, "other": other}
    g = Gust(tmp, conf)
    try:
        wait_for(lambda: "[source:tin] subscribed to tls/in" in g.log(), 10, "mqtt_in over TLS")
        t.check("[source:tin] connecting to %s (TLS)" % broker.addr in g.log(), "TLS named in the log")
        sub = Sub(broker, "tls/out", 300, 0, client_id="test-sub-tls", cafile=ca)
        pub(broker, "tls/in", 300, cafile=ca)
        res, _ = sub.result()
        check_all(t, res, 300, "TLS both ways")
        wait_for(lambda: "[source:tbad] cannot connect to %s: TLS handshake with %s: certificate verify failed"
                 % (broker.addr, broker.addr) in g.log(), 10, "a clear TLS verification error")
        # libmosquitto's own network thread would stop for good after this: mqtt_out's tries again.
        bad_out = re.compile(r"\[sink:toutbad\] cannot connect to %s: TLS: .*certificate verify failed; retrying in"
                             % re.escape(broker.addr))
        wait_for(lambda: len(bad_out.findall(g.log())) >= 2, 20, "mqtt_out's TLS error, and a second attempt")
    except AssertionError:
        print(g.log()[-3000:])
        raise
    finally:
        g.stop()
        broker.stop()
        if t.failed:
            print(g.log()[-3000:])


def test_topic_template(t, tmp, nats, broker):
    """mqtt_out's topic from a payload field (and the subject); a message without the
    field is REJECTED: max_deliver attempts, then the dead-letter stream with the reason."""
    conf = """
plugin_dir %(plugins)s;
plugin mqtt;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_deliver 2; retry_delay 50ms; }
sink tpl { use mqtt_out; source ev.tpl.>; broker %(broker)s; topic "dev/{payload.device}/{subject}"; topic_strip ev.tpl; qos 1; }
""" % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "broker": broker.addr}
    g = Gust(tmp, conf)
    try:
        wait_for(lambda: "[sink:tpl] connected to" in g.log(), 10, "mqtt_out connected")
        sub = Sub(broker, "dev/#", 3, 300, client_id="test-sub-tpl", printing=True)
        nats_publish(nats.port, [("ev.tpl.a", b'{"id":300,"device":"d1"}'), ("ev.tpl.b.c", b'{"id":301,"device":"d2"}'),
                                 ("ev.tpl.a", b'{"id":999,"other":1}'), ("ev.tpl.a", b'{"id":302,"device":42}')])
        res, lines = sub.result()
        check_all(t, res, 3, "topic template")
        t.eq(sorted(line.split(" ", 1)[0] for line in lines), ["dev/42/a", "dev/d1/a", "dev/d2/b/c"],
             "topics from the payload field and the subject")

        def dead():
            return [json.loads(d) for _, _, d in nats.read_stream("GUST_DLQ") if b'"unit":"tpl"' in d]
        got = wait_for(lambda: dead(), 20, "the message without the field in the DLQ")
        t.eq(len(got), 1, "one dead letter")
        t.eq(got[0]["payload"], '{"id":999,"other":1}', "the message without the field")
        t.check("topic {payload.device}: the payload has no such field" in got[0]["error"],
                "clear reason: %r" % got[0]["error"])
        t.eq(got[0]["attempts"], 2, "after max_deliver attempts")
    finally:
        g.stop()
        if t.failed:
            print(g.log()[-3000:])


def test_out_idle_and_window(t, tmp, nats, broker):
    """mqtt_out between batches and within one: idle for longer than 1.5 keepalive periods
    (the broker drops a client silent that long), the connection stays up (libmosquitto's
    PINGREQs); then a batch larger than max_inflight goes out in windows, every message in
    order."""
    conf = """
plugin_dir %(plugins)s;
plugin mqtt;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; }
sink kw { use mqtt_out; source ev.kw; broker %(broker)s; topic kw/out; qos 1; keepalive 5s; max_inflight 7; }
""" % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "broker": broker.addr}
    g = Gust(tmp, conf)
    try:
        wait_for(lambda: "[sink:kw] connected to" in g.log(), 10, "mqtt_out connected")
        time.sleep(8.5)
        t.check("[sink:kw] disconnected" not in g.log(), "idle for 1.7 keepalive periods: PINGREQs kept it up")
        n, start = 500, 400000
        sub = Sub(broker, "kw/out", n, start, client_id="test-sub-kw")
        nats_publish(nats.port, [("ev.kw", b'{"id":%d}' % (start + i)) for i in range(n)])
        res, _ = sub.result()
        check_all(t, res, n, "windows of max_inflight 7")
        t.eq(res["duplicates"], 0, "windows: no duplicates")
        t.eq(res["out_of_order"], 0, "windows: in order")
        t.eq(g.log().count("[sink:kw] connected to"), 1, "one connection all along")
    finally:
        g.stop()
        if t.failed:
            print(g.log()[-3000:])


BUS_CONF = """
plugin_dir %(plugins)s;
plugin mqtt;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; publish_timeout 1s; }
source bus { use mqtt_in; broker %(broker)s; topic bus/#; subject ev.mqtt.bus; qos 1; max_inflight 64;
             competing on; }
"""


def test_bus_outage(t, tmp, nats, broker):
    """The bus goes away under mqtt_in (competing on: no lease, so the same instance lives
    through it): its publishes fail and are sent again from the ring, the broker keeps what
    has no PUBACK yet, the failure and the recovery are logged, and once the bus is back
    every message is in the stream."""
    def stored():
        return {json.loads(d)["id"] for _, s, d in nats.read_stream() if s == "ev.mqtt.bus"}

    g = Gust(tmp, BUS_CONF % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "broker": broker.addr})
    try:
        wait_for(lambda: "[source:bus] subscribed to bus/#" in g.log(), 10, "mqtt_in subscribed")
        pub(broker, "bus/a", 200, start=500000)
        wait_for(lambda: len(stored()) >= 200, 20, "the first 200 stored")
        nats.stop()
        pub(broker, "bus/a", 300, start=500200)  # the broker takes them; gust cannot store them
        wait_for(lambda: "[source:bus] publish failed:" in g.log(), 20, "the failure logged")
        nats.start()
        wait_for(lambda: "[source:bus] publishing again" in g.log(), 30, "the recovery logged")
        wait_for(lambda: len(stored()) >= 500, 30, "all stored after the outage")
        t.eq(stored(), set(range(500000, 500500)), "every message stored, none missing")
        t.check(re.search(r"\[warn\] \[source:bus\] publish failed", g.log()), "the failure at warn level")
    finally:
        g.stop()
        if t.failed:
            print(g.log()[-3000:])
    t.check(re.search(r"\[source:bus\] stopped: \d+ received, \d+ stored, 0 rejected", g.log()), "counters at stop")


def test_config_errors(t, tmp, nats):
    """Values only the plugin understands are checked when the unit is created (at start,
    and by `gust -t`): gust must exit non-zero naming file:line."""
    cases = [
        ("source s { use mqtt_in; broker 127.0.0.1:1; topic a; subject ev.a; subject_prefix ev.b; }",
         "set exactly one of subject and subject_prefix"),
        ("source s { use mqtt_in; broker 127.0.0.1:1; topic a; subject ev.a; qos 2; }", "qos must be within 0..1"),
        ("source s { use mqtt_in; broker 127.0.0.1:1; topic a; subject ev.a; non_json drop; }",
         "non_json: \"drop\" is not reject, wrap or pass"),
        ("sink s { use mqtt_out; source ev.a; broker 127.0.0.1:1; topic a/#; }", "is not a topic one can publish to"),
        ("sink s { use mqtt_out; source ev.a; broker 127.0.0.1:1; }", "set exactly one of topic and topic_from_subject"),
        ('sink s { use mqtt_out; source ev.a; broker 127.0.0.1:1; topic "a/{payload.x"; }', "'{' at offset 2 is not closed"),
        ('sink s { use mqtt_out; source ev.a; broker 127.0.0.1:1; topic "a/{device}"; }',
         "unknown placeholder {device}: use {subject}, {subject.N}, {payload.FIELD}, {env.X} or {secret:PATH#KEY}"),
        ("sink s { use mqtt_out; source ev.a; broker 127.0.0.1:1; topic a; tls_cert c.pem; }",
         "tls_cert and tls_key go together"),
        ("sink s { use mqtt_out; source ev.a; broker 127.0.0.1:1; topic a; keepalive 4500ms; }",
         "keepalive: mqtt_out needs at least 5s (libmosquitto refuses a shorter one)"),
    ]
    check_config_errors(t, tmp, nats, "mqtt", cases)

    # `gust -t` creates the units too: mqtt_out's keepalive floor is caught there, and it is
    # mqtt_out's alone (mqtt_in has its own client, which takes 1s).
    path, p = plugin_check(tmp, nats, "mqtt",
                           "sink s { use mqtt_out; source ev.a; broker 127.0.0.1:1; topic a; keepalive 4s; }", "-t")
    t.check(p.returncode != 0, "gust -t refuses mqtt_out's keepalive 4s")
    t.check(path + ":3: keepalive: mqtt_out needs at least 5s" in p.stderr, "names file:line: %r" % p.stderr[-600:])
    path, p = plugin_check(tmp, nats, "mqtt",
                           "sink s { use mqtt_out; source ev.a; broker 127.0.0.1:1; topic a; keepalive 5s; } "
                           "source i { use mqtt_in; broker 127.0.0.1:1; topic a; subject ev.a; keepalive 1s; }", "-t")
    t.eq(p.returncode, 0, "gust -t takes mqtt_out's 5s and mqtt_in's 1s: %r" % p.stderr[-600:])


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("fwd.lua", FWD)
    nats = NatsServer(tmp)
    broker = Mosquitto(tmp)
    conf = CONF % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "broker": broker.addr,
                   "tmp": tmp.path}
    try:
        test_config_errors(t, tmp, nats)
        test_topic_template(t, tmp, nats, broker)
        test_out_idle_and_window(t, tmp, nats, broker)
        test_pipeline(t, tmp, nats, broker, conf)
        test_credentials(t, tmp, nats)
        test_tls(t, tmp, nats)
        test_bus_outage(t, tmp, nats, broker)
    finally:
        broker.stop()
        nats.stop()
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
