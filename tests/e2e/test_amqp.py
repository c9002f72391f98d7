"""The amqp plugin against a real rabbitmq-server and nats-server: 3000 messages waiting
in a queue go amqp_in -> JetStream -> amqp_out across a kill -9 of gust (every id comes
out, JetStream holds each once: basic.ack after the PubAck, Nats-Msg-Id from the
message_id); the broker down 10 s mid-run loses nothing and dead-letters nothing; an
unroutable message and one for a missing exchange are dead-lettered with the broker's
text; a queue that differs from what `declare on` asks is a clear error; properties and
headers reach flows; bad settings are refused by gust -t with file:line."""
import json
import os
import signal
import subprocess
import time

from gustlib import (BUILD, Checks, Gust, NatsServer, RabbitMQ, TempDir, check_config_errors, make_certs, nats_publish,
                     plugin_check, wait_for)

TOOL = os.path.join(BUILD, "tests", "gust-amqp-tool")


def tool(rmq, *args):
    p = subprocess.run([TOOL, rmq.url] + [str(a) for a in args], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("gust-amqp-tool %s: %s" % (" ".join(map(str, args)), p.stderr))
    return p.stdout


def get_all(rmq, queue):
    """Every message now in queue (taken and acked): [(message_id, delivery_mode, content_type, headers, body)]."""
    out = []
    for line in tool(rmq, "get", queue).splitlines():
        mid, mode, ctype, hdrs, body = line.split("\t", 4)
        out.append((mid, int(mode), ctype, hdrs, body))
    return out


class Collector:
    """What has come out of a queue so far (reading takes it out)."""

    def __init__(self, rmq, queue):
        self.rmq, self.queue, self.msgs = rmq, queue, []

    def ids(self):
        time.sleep(0.2)  # each look is a process and a connection: not 100 a second
        self.msgs += get_all(self.rmq, self.queue)
        return [json.loads(m[4])["id"] for m in self.msgs]


CONF = """
plugin_dir %(plugins)s;
plugin amqp;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; ack_wait 3s; max_deliver 2; }
source ain_%(tag)s  { use amqp_in; url %(url)s; queue %(qin)s; subject %(subject)s; prefetch %(prefetch)d;
                      competing on; }
sink   aout_%(tag)s { use amqp_out; source %(subject)s; url %(url)s; exchange ""; routing_key %(qout)s; }
"""


def conf(nats, rmq, qin, qout, subject, tag, prefetch=64):
    return CONF % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "url": rmq.url, "qin": qin,
                   "qout": qout, "subject": subject, "tag": tag, "prefetch": prefetch}


def stop(t, g, what):
    """Stops gust and checks it went cleanly: exit 0, and nothing from a sanitizer (an
    AddressSanitizer build reports into the log)."""
    rc = g.stop()
    t.check(rc == 0 and "Sanitizer" not in g.log() and "runtime error:" not in g.log(),
            "%s: gust stopped cleanly (exit %s)" % (what, rc))


def dead_letters(nats, unit):
    return [json.loads(d) for _, _, d in nats.read_stream("GUST_DLQ") if ('"unit":"%s"' % unit).encode() in d]


def unit_entry(g, name):
    u = json.loads(g.request("GET", "/units")[1])
    return next((x for x in u["units"] + u.get("sources", []) if x["name"] == name), {})


def plugin_counters(g, name):
    return unit_entry(g, name).get("plugin", {})


def test_kill9(t, tmp, nats, rmq):
    """3000 messages waiting in gust_in; gust killed with -9 about a second in, then restarted."""
    n = 3000
    tool(rmq, "declare", "gust_out", "durable")
    tool(rmq, "publish", "gust_in", n)
    t.eq(tool(rmq, "count", "gust_in").strip(), str(n), "3000 messages waiting")
    out = Collector(rmq, "gust_out")
    # A small prefetch, so that the run lasts long enough for the kill to land in it.
    c = conf(nats, rmq, "gust_in", "gust_out", "ev.amqp", "k", prefetch=4)
    g = Gust(tmp, c)
    try:
        wait_for(lambda: len(nats.payloads("ev.amqp")) >= 300, 30, "the bridge to be flowing")
        g.proc.send_signal(signal.SIGKILL)
        g.proc.wait(10)
        stored = len(nats.payloads("ev.amqp"))
        left = int(tool(rmq, "count", "gust_in"))
        print("kill -9: %d stored in JetStream, %d still ready in gust_in" % (stored, left), flush=True)
        t.check(0 < stored < n, "the kill landed mid-run (%d of %d stored)" % (stored, n))
        g = Gust(tmp, c)
        wait_for(lambda: len(set(out.ids())) >= n, 120, "every id in gust_out")
        ids = out.ids()
        t.eq(len(set(ids)), n, "kill -9: distinct ids in gust_out")
        t.eq(sorted(set(ids)), list(range(n)), "kill -9: the ids sent")
        js = [p["id"] for p in nats.payloads("ev.amqp")]
        t.eq(len(js), n, "kill -9: JetStream holds each id once (%d duplicates)" % (len(js) - len(set(js))))
        t.eq(len(set(js)), n, "kill -9: JetStream holds every id")
        t.check(all(m[1] == 2 for m in out.msgs), "amqp_out publishes persistent messages (delivery_mode 2)")
        bad = [m for m in out.msgs if m[0] != "gust_in:m-%d" % json.loads(m[4])["id"]]
        t.eq(bad[:3], [], "amqp_out's message_id is the Nats-Msg-Id amqp_in gave it (<queue>:<message_id>)")
        t.check(all(m[2] == "application/json" for m in out.msgs), "content_type application/json")
        print("kill -9: %d in gust_out (%d published twice: at least once)" % (len(ids), len(ids) - n), flush=True)
        t.eq(dead_letters(nats, "aout_k"), [], "kill -9: no dead letters")
        wait_for(lambda: plugin_counters(g, "ain_k").get("unacked") == 0, 20, "every delivery acked")
        t.eq(tool(rmq, "count", "gust_in").strip(), "0", "gust_in drained (every message acked)")
        wait_for(lambda: plugin_counters(g, "ain_k").get("backlog") == 0, 30,
                 "/units: ain_k's backlog (the queue's depth, refreshed every 5 s) down to 0")
        src = plugin_counters(g, "ain_k")
        t.eq(src.get("connected"), 1, "/units: ain_k connected")
        t.check(src.get("acked", 0) >= 1, "/units: ain_k counts acks: %r" % src)
        sink = plugin_counters(g, "aout_k")
        t.check(sink.get("published", 0) >= 1 and sink.get("connected") == 1, "/units: aout_k: %r" % sink)
        metrics = g.request("GET", "/metrics")[1].decode()
        t.check('gust_plugin_value{unit="aout_k",name="published"} ' in metrics, "/metrics: aout_k's counters")
        t.check('gust_plugin_value{unit="ain_k",name="acked"} ' in metrics, "/metrics: ain_k's counters")
    finally:
        stop(t, g, "test_kill9")
        if t.failed:
            print(g.log()[-3000:])


def test_broker_down(t, tmp, nats, rmq):
    """rabbitmq-server stopped for 10 s mid-run: both sides wait and reconnect; nothing
    lost, no dead letters, no hot reconnect loop."""
    tool(rmq, "declare", "d_out", "durable")
    tool(rmq, "publish", "d_in", 1000)
    out = Collector(rmq, "d_out")
    g = Gust(tmp, conf(nats, rmq, "d_in", "d_out", "ev.down", "d"))
    try:
        wait_for(lambda: len(set(out.ids())) >= 1000, 60, "the first 1000 through")
        rmq.stop()
        # While the broker is away: 1000 more reach the bus for amqp_out, which must keep them.
        nats_publish(nats.port, [("ev.down", json.dumps({"id": i}).encode()) for i in range(1000, 2000)])
        time.sleep(10)
        rmq.start()
        tool(rmq, "publish", "d_in", 1000, 2000)
        wait_for(lambda: len(set(out.ids())) >= 3000, 120, "all 3000 in d_out")
        t.eq(sorted(set(out.ids())), list(range(3000)), "broker down 10 s: every id")
        t.eq(dead_letters(nats, "aout_d"), [], "broker down 10 s: no dead letters")
        log = g.log()
        warns = [l for l in log.splitlines() if "retrying with backoff" in l]
        t.check(1 <= len(warns) <= 10, "one log line per state change, not one per attempt: %r" % warns)
        t.check("[source:ain_d] reconnected to amqp" in log and "[sink:aout_d] reconnected to amqp" in log,
                "both sides say they reconnected")
    finally:
        stop(t, g, "test_broker_down")
        if t.failed:
            print(g.log()[-3000:])


def test_refused(t, tmp, nats, rmq):
    """Unroutable (mandatory, basic.return) and no such exchange (channel closed 404):
    each dead-lettered with the broker's text."""
    c = """
plugin_dir %(plugins)s;
plugin amqp;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; ack_wait 3s; max_deliver 2; }
sink nowhere { use amqp_out; source ev.unroutable; url %(url)s; routing_key no_such_queue; }
sink noex    { use amqp_out; source ev.noex; url %(url)s; exchange no_such_exchange; routing_key x; }
sink big     { use amqp_out; source ev.big; url %(url)s; routing_key big_out; }
""" % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "url": rmq.url}
    # One batch of three, the middle one over the broker's max_message_size: the broker
    # closes the channel without saying which; only that one may be dead-lettered.
    tool(rmq, "declare", "big_out", "durable")
    nats_publish(nats.port, [("ev.big", b'{"id":1}'), ("ev.big", json.dumps({"id": 2, "pad": "x" * 70000}).encode()),
                             ("ev.big", b'{"id":3}')])
    g = Gust(tmp, c)
    try:
        nats_publish(nats.port, [("ev.unroutable", b'{"id":1}'), ("ev.noex", b'{"id":2}')])
        got = wait_for(lambda: dead_letters(nats, "nowhere"), 60, "the unroutable message in the DLQ")
        t.eq(len(got), 1, "one dead letter for the unroutable message")
        t.eq(got[0]["payload"], '{"id":1}', "the unroutable message")
        t.check("312 NO_ROUTE" in got[0]["error"], "the broker's text: %r" % got[0]["error"])
        got = wait_for(lambda: dead_letters(nats, "noex"), 60, "the message for a missing exchange in the DLQ")
        t.eq(len(got), 1, "one dead letter for the missing exchange")
        t.check("NOT_FOUND - no exchange 'no_such_exchange'" in got[0]["error"],
                "the broker's text: %r" % got[0]["error"])
        t.check(plugin_counters(g, "nowhere").get("returned", 0) >= 1, "/units counts the returned message")
        got = wait_for(lambda: dead_letters(nats, "big"), 60, "the message over max_message_size in the DLQ")
        out = Collector(rmq, "big_out")
        wait_for(lambda: len(set(out.ids())) >= 2, 60, "its batchmates in big_out")
        time.sleep(1)
        t.eq(sorted(set(out.ids())), [1, 3], "the batchmates of a refused message get through")
        got = dead_letters(nats, "big")
        t.eq(len(got), 1, "one dead letter: the large message alone")
        t.check("406" in got[0]["error"] and "max size" in got[0]["error"], "the broker's text: %r" % got[0]["error"])
        t.check("[sink:big] the broker refused one of " in g.log(),
                "the large one came with a batchmate unconfirmed, and amqp_out went one message at a time")
    finally:
        stop(t, g, "test_refused")
        if t.failed:
            print(g.log()[-3000:])


HDR = """
-- what amqp_in's headers say, for the test to read back
return {
  source = "ev.hdr_in",
  on_event = function(ev, meta)
    local h = meta.headers
    emit("ev.hdr", { id = ev.id, msg_id = h["Amqp-Message-Id"], corr = h["Amqp-Correlation-Id"],
                     ctype = h["Content-Type"], app = h["Amqp-App-Id"], tenant = h["tenant"],
                     rk = h["Amqp-Routing-Key"], nats = h["Nats-Expected-Stream"] })
  end,
}
"""


def test_declare_headers_payload(t, tmp, nats, rmq):
    """declare on against a queue that differs, declare off against a missing queue:
    one clear log line each; properties and headers in meta.headers; non_json reject and wrap."""
    tool(rmq, "declare", "t_in", "transient")
    tool(rmq, "declare", "h_in", "durable")
    tool(rmq, "declare", "w_in", "durable")
    tool(rmq, "declare", "h_7", "durable")
    tool(rmq, "declare", "h_8", "durable")
    tool(rmq, "send", "", "h_in", '{"id":7}', "message_id=abc", "correlation_id=c-1", "content_type=application/json",
         "app_id=shop", "header:tenant=acme", "header:Nats-Expected-Stream=NOPE")
    tool(rmq, "send", "", "h_in", "not json")
    tool(rmq, "send", "", "h_in", '{"id":8}')
    tool(rmq, "send", "", "w_in", "hello")
    c = """
plugin_dir %(plugins)s;
plugin amqp;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; ack_wait 3s; max_deliver 2; }
source tin  { use amqp_in; url %(url)s; queue t_in; subject ev.t; competing on; }
source nin  { use amqp_in; url %(url)s; queue no_such_queue; declare off; subject ev.n; competing on; }
source toff { use amqp_in; url %(url)s; queue t_in; declare off; subject ev.toff; competing on; }
source hin  { use amqp_in; url %(url)s; queue h_in; subject ev.hdr_in; competing on; }
source win  { use amqp_in; url %(url)s; queue w_in; subject ev.wrap; non_json wrap; competing on; }
flow hdr { script %(hdr)s; }
sink hout { use amqp_out; source ev.hdr_in; url %(url)s; routing_key "h_{payload.id}"; }
""" % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "url": rmq.url,
       "hdr": tmp.file("hdr.lua", HDR)}
    tool(rmq, "send", "", "t_in", '{"id":9}')
    g = Gust(tmp, c)
    try:
        wait_for(lambda: "[source:tin] amqp" in g.log() and "[source:nin] amqp" in g.log(), 20, "the errors logged")
        log = g.log()
        line = next(l for l in log.splitlines() if "[source:tin] amqp" in l)
        t.check("queue t_in exists with other settings" in line and "inequivalent arg 'durable'" in line,
                "declare on: the difference named: %r" % line)
        line = next(l for l in log.splitlines() if "[source:nin] amqp" in l)
        t.check("queue no_such_queue does not exist" in line, "declare off: a missing queue: %r" % line)
        t.eq(plugin_counters(g, "tin").get("connected"), 0, "/units: tin not connected")
        wait_for(lambda: nats.payloads("ev.toff"), 20, "declare off takes the queue as it is")
        t.eq(nats.payloads("ev.toff"), [{"id": 9}], "declare off: the message of t_in")
        h = wait_for(lambda: len(nats.payloads("ev.hdr")) >= 2 and nats.payloads("ev.hdr"), 20, "the headers")
        t.eq(h[0], {"id": 7, "msg_id": "abc", "corr": "c-1", "ctype": "application/json", "app": "shop",
                    "tenant": "acme", "rk": "h_in"}, "properties and headers in meta.headers, Nats-* dropped")
        t.eq(h[1].get("id"), 8, "a message without properties")
        t.eq(len(h), 2, "the non-JSON message rejected (not published)")
        t.eq(plugin_counters(g, "hin").get("rejected"), 1, "/units counts the rejected message")
        # And back out through amqp_out, routed by a template: headers -> properties.
        h7 = wait_for(lambda: get_all(rmq, "h_7"), 20, "message 7 routed to h_7")
        t.eq([(m[0], m[1], m[2], m[4]) for m in h7], [("h_in:abc", 2, "application/json", '{"id":7}')],
             "routing_key template; message_id from Nats-Msg-Id; content_type back from Content-Type")
        t.check("tenant=acme;" in h7[0][3] and "Amqp-" not in h7[0][3] and "Nats-" not in h7[0][3],
                "other headers into the headers table, mapped and Nats-* ones not: %r" % h7[0][3])
        h8 = wait_for(lambda: get_all(rmq, "h_8"), 20, "message 8 routed to h_8")
        t.check(len(h8) == 1 and h8[0][0].startswith("gust:"), "no Nats-Msg-Id: message_id gust:<seq>: %r" % h8)
        w = wait_for(lambda: nats.payloads("ev.wrap"), 20, "the wrapped message")
        t.eq(w, [{"payload_base64": "aGVsbG8=", "queue": "w_in"}], "non_json wrap")
        time.sleep(2)
        lines = [l for l in g.log().splitlines() if "[source:tin] amqp" in l]
        t.eq(len(lines), 1, "one log line for the mismatch, not one per attempt: %r" % lines)
    finally:
        stop(t, g, "test_declare_headers_payload")
        if t.failed:
            print(g.log()[-3000:])


def test_tls_and_credentials(t, tmp, nats, rmq, certs):
    """amqps:// with tls_ca and the password from password_file; a wrong password and a
    CA that did not sign the broker's certificate: one clear log line each, no secret in it."""
    tool(rmq, "declare", "s_in", "durable")
    tool(rmq, "send", "", "s_in", '{"id":5}')
    c = """
plugin_dir %(plugins)s;
plugin amqp;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; ack_wait 3s; max_deliver 2; }
source sin { use amqp_in; url amqps://guest@localhost:%(tls)d/%%2f; password_file %(good)s; tls_ca %(ca)s;
             queue s_in; subject ev.tls; competing on; }
source bad { use amqp_in; url amqp://guest@127.0.0.1:%(port)d/%%2f; password_file %(bad)s; queue s_in;
             subject ev.never; competing on; }
source oca { use amqp_in; url amqps://guest@localhost:%(tls)d/%%2f; password_file %(good)s; tls_ca %(other)s;
             queue s_in; subject ev.never; competing on; }
""" % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "tls": rmq.tls_port, "port": rmq.port,
       "good": tmp.file("pw", "guest\n"), "bad": tmp.file("badpw", "not-the-pw\n"), "ca": certs["ca"],
       "other": certs["other_ca"]}
    g = Gust(tmp, c)
    try:
        got = wait_for(lambda: nats.payloads("ev.tls"), 30, "the message read over TLS")
        t.eq(got, [{"id": 5}], "amqps:// with tls_ca and password_file")
        t.eq(plugin_counters(g, "sin").get("connected"), 1, "/units: sin connected")
        wait_for(lambda: "[source:bad] amqp" in g.log() and "[source:oca] amqp" in g.log(), 20, "the refusals logged")
        time.sleep(3)
        log = g.log()
        bad = [l for l in log.splitlines() if "[source:bad] amqp" in l]
        t.eq(len(bad), 1, "one log line for the wrong password, not one per attempt: %r" % bad)
        t.check("ACCESS_REFUSED" in bad[0], "the broker's refusal: %r" % bad[0])
        shown = unit_entry(g, "bad")
        t.check("ACCESS_REFUSED" in (shown.get("plugin_error") or "") and shown.get("plugin_error_at"),
                "/units shows the refusal and when it began: %r" % shown)
        t.eq(unit_entry(g, "sin").get("plugin_error", "absent"), None, "/units: no error for sin, connected")
        oca = [l for l in log.splitlines() if "[source:oca] amqp" in l]
        t.eq(len(oca), 1, "one log line for the unknown CA: %r" % oca)
        t.eq(plugin_counters(g, "oca").get("connected"), 0, "/units: oca not connected")
        t.check("not-the-pw" not in log, "no password in the log")
    finally:
        stop(t, g, "test_tls_and_credentials")
        if t.failed:
            print(g.log()[-3000:])


def test_config_errors(t, tmp, nats):
    cases = [
        ("source s { use amqp_in; url amqp://127.0.0.1; subject ev.a; }", "queue"),
        ("source s { use amqp_in; url amqp://127.0.0.1; queue q; subject ev.a; colour red; }", "colour"),
        ("source s { use amqp_in; url http://127.0.0.1:1; queue q; subject ev.a; }",
         "url must be a URL of scheme amqp|amqps in source 's'"),
        ("sink s { use amqp_out; source ev.a; url amqp://127.0.0.1:99999/%2f; routing_key k; }",
         "invalid URL for 'url'"),
        ("source s { use amqp_in; url amqp://127.0.0.1; queue q; subject ev.a; prefetch 0; }", "prefetch"),
        ("source s { use amqp_in; url amqp://127.0.0.1; queue q; subject ev.a; non_json maybe; }", "non_json"),
        ("sink s { use amqp_out; source ev.a; url amqp://127.0.0.1; tls_ca /etc/hosts; routing_key k; }",
         "tls_ca: the url is amqp://"),
        ("sink s { use amqp_out; source ev.a; url amqp://127.0.0.1; routing_key \"{payload.\"; }", "routing_key"),
        ("sink s { use amqp_out; source ev.a; url amqp://127.0.0.1; }", "routing_key"),
    ]

    check_config_errors(t, tmp, nats, "amqp", cases, "-t")
    path, p = plugin_check(tmp, nats, "amqp",
                           "source s { use amqp_in; url amqp://u:secret@127.0.0.1:5672/%2f; queue q; subject ev.a; } "
                           "sink o { use amqp_out; source ev.a; url amqps://127.0.0.1/v; tls_ca /etc/hosts; "
                           "exchange ex; routing_key \"r.{payload.id}\"; }", "-t")
    t.eq(p.returncode, 0, "gust -t takes a good pair: %r" % p.stderr[-600:])


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    test_config_errors(t, tmp, nats)
    certs = make_certs(tmp)
    rmq = RabbitMQ(tmp, tls=certs, max_message_size=65536)
    try:
        test_kill9(t, tmp, nats, rmq)
        test_refused(t, tmp, nats, rmq)
        test_declare_headers_payload(t, tmp, nats, rmq)
        test_tls_and_credentials(t, tmp, nats, rmq, certs)
        test_broker_down(t, tmp, nats, rmq)
    finally:
        if t.failed:
            print(rmq.logs()[-3000:])
        rmq.close()
        nats.stop()
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
