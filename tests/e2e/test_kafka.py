"""The kafka plugin against a Kafka cluster over TCP (librdkafka's mock cluster in
gust-kafka-mock: Kafka has no Debian server) and a real nats-server: 3000 messages waiting
in a topic go kafka_in -> JetStream -> kafka_out across a kill -9 of gust (every id comes
out, JetStream holds each once: offsets committed after the PubAck, Nats-Msg-Id
topic:partition:offset); the brokers down 10 s mid-run lose nothing and dead-letter
nothing; a message the broker refuses is dead-lettered with its error; two gust processes
in one group split the partitions and one takes over from the other killed with -9;
headers both ways and the non-JSON policy; bad settings refused by gust -t with file:line.
kcat (Debian's) produces and reads the topics."""
import json
import os
import signal
import sys
import time

from gustlib import (BUILD, Checks, Gust, KafkaMock, NatsServer, TempDir, check_config_errors, nats_publish,
                     plugin_check, wait_for)

PLUGINS = os.path.join(BUILD, "plugins")


CONF = """
plugin_dir %(plugins)s;
plugin kafka;
%(extra)s
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; ack_wait 10s; max_deliver 2; }
source kin_%(tag)s  { use kafka_in; brokers %(boot)s; topics %(tin)s; group %(group)s; subject %(subject)s;
                      max_inflight %(inflight)d; %(competing)s }
sink   kout_%(tag)s { use kafka_out; source %(subject)s; brokers %(boot)s; topic %(tout)s; key "{payload.id}"; }
"""


def conf(nats, kafka, tin, tout, subject, tag, inflight=1024, group="gust", competing="", extra=""):
    return CONF % {"plugins": PLUGINS, "nats": nats.url, "boot": kafka.bootstrap, "tin": tin, "tout": tout,
                   "subject": subject, "tag": tag, "inflight": inflight, "group": group, "competing": competing,
                   "extra": extra}


def payloads(n, start=0):
    return [(str(i), json.dumps({"id": i, "v": i * 7})) for i in range(start, start + n)]


def dead_letters(nats, unit):
    return [json.loads(d) for _, _, d in nats.read_stream("GUST_DLQ") if ('"unit":"%s"' % unit).encode() in d]


def check_once(t, nats, kafka, subject, tout, n, what):
    wait_for(lambda: len(set(kafka.ids(tout))) >= n, 120, what + ": every id in " + tout)
    got = kafka.ids(tout)
    t.eq(len(set(got)), n, what + ": distinct ids in " + tout)
    t.eq(sorted(set(got)), list(range(n)), what + ": the ids sent")
    js = [p["id"] for p in nats.payloads(subject)]
    t.eq(len(js), n, what + ": JetStream holds each id once (%d duplicates)" % (len(js) - len(set(js))))
    t.eq(len(set(js)), n, what + ": JetStream holds every id")
    print("%s: %d in %s (%d written twice: at least once), %d on the bus" % (what, len(got), tout,
                                                                           len(got) - len(set(got)), len(js)),
          flush=True)


def stop_clean(t, g, what):
    """SIGTERM: exit status 0 and nothing from a sanitizer (an ASan build reports leaks
    and errors in the log and exits non-zero)."""
    rc = g.stop()
    t.eq(rc, 0, what + ": gust's exit status")
    t.check("Sanitizer" not in g.log() and "runtime error" not in g.log(), what + ": no sanitizer report")


def units(g):
    body = json.loads(g.request("GET", "/units")[1])
    sinks = {u["name"]: u.get("plugin", {}) for u in body["units"]}
    sources = {s["name"]: s.get("plugin", {}) for s in body.get("sources", [])}
    return sources, sinks


def test_kill9(t, tmp, nats):
    """3000 messages waiting in 3 partitions; gust killed with -9 while it bridges them,
    then restarted: the new consumer reads from the committed offsets."""
    n = 3000
    kafka = KafkaMock(tmp, "in:3", "out:3")
    kafka.produce("in", payloads(n))
    # One publish in flight at a time (each waits for its PubAck), so that the run lasts
    # long enough for the kill to land in it.
    # competing on: no lease, so a renewal missed on a loaded machine cannot restart the
    # source (and its counters, which the checks below read) mid-run.
    c = conf(nats, kafka, "in", "out", "ev.kafka", "k", inflight=1, competing="competing on;")
    g = Gust(tmp, c)
    try:
        wait_for(lambda: nats.count() >= 300, 30, "the bridge to be flowing")
        g.proc.send_signal(signal.SIGKILL)
        g.proc.wait(10)
        stored = len(nats.payloads("ev.kafka"))
        print("kill -9 with %d of %d stored in JetStream" % (stored, n), flush=True)
        t.check(stored < n, "the kill landed mid-run (%d stored)" % stored)
        g = Gust(tmp, c)
        check_once(t, nats, kafka, "ev.kafka", "out", n, "kill -9")
        # Read again after the restart: from the committed offsets, which lag the PubAcks
        # (commits every 100 ms), so some messages stored before the kill come again and
        # JetStream (checked above) kept them once.
        again = units(g)[0]["kin_k"]["read"] - (n - stored)
        print("read again after the restart: %d (stored, not yet committed at the kill)" % again, flush=True)
        t.check(again > 0, "the kill landed between PubAcks and their commit: %d read again" % again)
        t.eq(dead_letters(nats, "kout_k"), [], "kill -9: no dead letters")
        # The NATS headers of each message (kafka_in's, and its Nats-Msg-Id) as Kafka headers.
        hdrs = [line for line in kafka.consume("out", "%h\\n").splitlines() if line.strip()]
        t.check(len(hdrs) >= n and all("Nats-Msg-Id=in:" in h and "Kafka-Topic=in" in h for h in hdrs),
                "Nats-Msg-Id and Kafka-Topic as Kafka headers: %r" % hdrs[:2])
        wait_for(lambda: units(g)[0].get("kin_k", {}).get("lag", 1) == 0, 20, "no lag left")
        sources, sinks = units(g)
        t.eq(sinks["kout_k"].get("connected"), 1, "/units: kout_k connected")
        t.check(sinks["kout_k"].get("written", 0) >= 1, "/units: kout_k counts what it wrote: %r" % sinks["kout_k"])
        t.eq(sources["kin_k"].get("connected"), 1, "/units: kin_k connected")
        t.eq(sources["kin_k"].get("partitions"), 3, "/units: kin_k holds the 3 partitions")
        t.check(sources["kin_k"].get("commits", 0) >= 1, "/units: kin_k counts its commits: %r" % sources["kin_k"])
        metrics = g.request("GET", "/metrics")[1].decode()
        t.check('gust_plugin_value{unit="kin_k",name="lag"} ' in metrics, "/metrics: kin_k's counters")
        t.check('gust_plugin_value{unit="kout_k",name="written"} ' in metrics, "/metrics: kout_k's counters")
        t.check("[source:kin_k] assigned 3 partition(s)" in g.log(), "the assignment logged")
    finally:
        stop_clean(t, g, "kill -9")
        kafka.stop()
        if t.failed:
            print(g.log()[-3000:])


def test_broker_down(t, tmp, nats):
    """The brokers down 10 s mid-run: both sides wait and reconnect; nothing lost, no dead
    letters, one log line per state change."""
    kafka = KafkaMock(tmp, "d_in:3", "d_out:3")
    kafka.produce("d_in", payloads(1000))
    g = Gust(tmp, conf(nats, kafka, "d_in", "d_out", "ev.down", "d", group="gd"))
    try:
        wait_for(lambda: len(set(kafka.ids("d_out"))) >= 1000, 60, "the first 1000 through")
        kafka.cmd("down")
        # While the brokers are away: 1000 more reach the bus for kafka_out, which must keep them.
        nats_publish(nats.port, [("ev.down", json.dumps({"id": i}).encode()) for i in range(1000, 2000)])
        time.sleep(10)
        kafka.cmd("up")
        kafka.produce("d_in", payloads(1000, 2000))
        wait_for(lambda: len(set(kafka.ids("d_out"))) >= 3000, 120, "all 3000 in d_out")
        t.eq(sorted(set(kafka.ids("d_out"))), list(range(3000)), "brokers down 10 s: every id")
        t.eq(dead_letters(nats, "kout_d"), [], "brokers down 10 s: no dead letters")
        log = g.log()
        warns = [line for line in log.splitlines() if "[sink:kout_d] kafka " in line and "WARN" in line.upper()]
        t.check(len(warns) <= 8, "a few log lines per state change, not one per attempt: %r" % warns)
        t.check("[sink:kout_d] reconnected to kafka" in log, "the sink says it reconnected")
    finally:
        stop_clean(t, g, "brokers down")
        kafka.stop()
        if t.failed:
            print(g.log()[-3000:])


def test_refused(t, tmp, nats):
    """The broker refuses the Produce (MESSAGE_TOO_LARGE, error 10): the message is
    dead-lettered with the broker's error."""
    kafka = KafkaMock(tmp, "w_in:1", "w_out:1")
    g = Gust(tmp, conf(nats, kafka, "w_in", "w_out", "ev.wrong", "w", group="gw"))
    try:
        wait_for(lambda: units(g)[1].get("kout_w") is not None, 10, "the sink running")
        kafka.cmd("produce_errors 20 10")
        nats_publish(nats.port, [("ev.wrong", b'{"id":1}')])
        got = wait_for(lambda: dead_letters(nats, "kout_w"), 60, "the refused message in the DLQ")
        t.eq(len(got), 1, "one dead letter")
        t.eq(got[0]["payload"], '{"id":1}', "the message refused")
        t.check("too large" in got[0]["error"], "the broker's error: %r" % got[0]["error"])
        t.eq(units(g)[1]["kout_w"].get("refused", 0) >= 1, True, "/units counts the refusal")
    finally:
        stop_clean(t, g, "refused")
        kafka.stop()
        if t.failed:
            print(g.log()[-3000:])


HDR = """
-- what kafka_in's headers say, for the test to read back
return {
  source = "ev.wrap",
  on_event = function(ev, meta)
    local h = meta.headers
    emit("ev.hdr", { topic = h["Kafka-Topic"], partition = h["Kafka-Partition"], offset = h["Kafka-Offset"],
                     key = h["Kafka-Key"], trace = h["trace"] })
  end,
}
"""


def test_payload_and_headers(t, tmp, nats):
    """non_json reject and wrap; Kafka headers -> NATS headers (meta.headers); NATS headers
    (Nats-Msg-Id) -> Kafka headers; start latest."""
    kafka = KafkaMock(tmp, "p_in:1", "q_in:1", "l_in:1", "h_out:1")
    kafka.produce("p_in", [("a", '{"id":1}'), ("b", "not json"), ("c", '{"id":2}')])
    # An empty value: nats.c cannot read back a message holding one, so the host leaves it out.
    kafka.produce("q_in", [("k1", "hello")], headers=["trace=abc", "empty="])
    kafka.produce("l_in", [("x", '{"old":1}')])
    c = """
plugin_dir %(plugins)s;
plugin kafka;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; ack_wait 10s; max_deliver 2; }
source pin { use kafka_in; brokers %(boot)s; topics p_in; group g; subject ev.pay; competing on; }
source qin { use kafka_in; brokers %(boot)s; topics q_in; group g; subject ev.wrap; non_json wrap; competing on; }
source lin { use kafka_in; brokers %(boot)s; topics l_in; group g; subject ev.latest; start latest; competing on; }
flow hdr { script %(hdr)s; }
sink hout { use kafka_out; source ev.hdr; brokers %(boot)s; topic h_out; }
""" % {"plugins": PLUGINS, "nats": nats.url, "boot": kafka.bootstrap, "hdr": tmp.file("hdr.lua", HDR)}
    g = Gust(tmp, c)
    try:
        # Three sources join group g at once: under load the rebalances take a while.
        wait_for(lambda: len(nats.payloads("ev.pay")) >= 2 and nats.payloads("ev.wrap"), 60, "the messages on the bus")
        time.sleep(0.5)
        t.eq(nats.payloads("ev.pay"), [{"id": 1}, {"id": 2}], "not JSON rejected (non_json reject)")
        w = nats.payloads("ev.wrap")
        t.eq(len(w), 1, "one wrapped message")
        t.eq((w[0].get("payload_base64"), w[0].get("topic"), w[0].get("partition"), w[0].get("offset")),
             ("aGVsbG8=", "q_in", 0, 0), "non_json wrap: %r" % w)
        h = wait_for(lambda: nats.payloads("ev.hdr"), 10, "the flow's view of the headers")
        t.eq(h, [{"topic": "q_in", "partition": "0", "offset": "0", "key": "k1", "trace": "abc"}],
             "Kafka-Topic, Kafka-Partition, Kafka-Offset, Kafka-Key and the Kafka header trace in meta.headers")
        out = wait_for(lambda: kafka.consume("h_out").strip(), 20, "the flow's emit in h_out")
        t.eq(json.loads(out), h[0], "the flow's emit written to h_out")
        # At least once: a rebalance as qin and lin join group g can hand pin's partition back
        # before the reject's offset is committed, and it is read (and counted) again.
        wait_for(lambda: units(g)[0].get("pin", {}).get("rejected", 0) >= 1, 30, "/units counts the rejected message")
        wait_for(lambda: units(g)[0].get("lin", {}).get("partitions") == 1, 20, "lin assigned")
        time.sleep(1)
        kafka.produce("l_in", [("y", '{"new":2}')])
        wait_for(lambda: nats.payloads("ev.latest"), 20, "the new message of l_in")
        time.sleep(0.5)
        t.eq(nats.payloads("ev.latest"), [{"new": 2}], "start latest: only what came after the group")
    finally:
        stop_clean(t, g, "payload")
        kafka.stop()
        if t.failed or sys.exc_info()[0] is not None:
            print(g.log()[-3000:])


def test_group_takeover(t, tmp, nats):
    """Two gust processes in one group split 3 partitions; one is killed with -9, and the
    messages that then arrive in its partitions are read by the other once it takes them
    over (session.timeout.ms 10 s): nothing lost, each stored once."""
    kafka = KafkaMock(tmp, "g_in:3", "g_out:3")
    procs = []
    try:
        for node in ("a", "b"):
            c = conf(nats, kafka, "g_in", "g_out", "ev.group", "g", group="gg", competing="competing on;",
                     extra="node_name %s;" % node)
            procs.append(Gust(TempDir(), c))
        a, b = procs
        wait_for(lambda: units(a)[0].get("kin_g", {}).get("partitions", 0) +
                 units(b)[0].get("kin_g", {}).get("partitions", 0) == 3, 60, "the 3 partitions split between the two")
        pa, pb = units(a)[0]["kin_g"]["partitions"], units(b)[0]["kin_g"]["partitions"]
        t.check(pa >= 1 and pb >= 1, "each process holds partitions: %d and %d" % (pa, pb))
        kafka.produce("g_in", payloads(1500))
        wait_for(lambda: len(nats.payloads("ev.group")) >= 1500, 60, "the first 1500 on the bus")
        read_a = units(a)[0]["kin_g"]["read"]
        t.check(read_a >= 1, "a read its share: %d" % read_a)
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(10)
        kafka.produce("g_in", payloads(1500, 1500))
        wait_for(lambda: units(b)[0]["kin_g"].get("partitions") == 3, 60, "b takes over the 3 partitions")
        check_once(t, nats, kafka, "ev.group", "g_out", 3000, "group takeover")
    finally:
        for g in procs:
            g.stop(signal.SIGKILL)
        kafka.stop()
        if t.failed:
            for g in procs:
                print(g.log()[-3000:])


def test_config_errors(t, tmp, nats):
    cases = [
        ("source s { use kafka_in; brokers 127.0.0.1:9092; topics a; subject ev.a; }", "group"),
        ("source s { use kafka_in; brokers 127.0.0.1:9092; topics a; group g; subject ev.a; colour red; }", "colour"),
        ("source s { use kafka_in; brokers 127.0.0.1; topics a; group g; subject ev.a; }",
         "brokers: \"127.0.0.1\" is not host:port"),
        ("sink s { use kafka_out; source ev.a; brokers 127.0.0.1:99999; topic a; }", "is not host:port"),
        ("source s { use kafka_in; brokers 127.0.0.1:9092; topics a; group g; subject ev.a; start middle; }", "start"),
        ("source s { use kafka_in; brokers h:1; topics a; group g; subject ev.a; rdkafka session.timeout.ms 1; }",
         "'rdkafka' in source 's' is written rdkafka.NAME VALUE"),
        ("source s { use kafka_in; brokers h:1; topics a; group g; subject ev.a; rdkafka.session.timeout.ms; }",
         "'rdkafka.session.timeout.ms' in source 's' takes one value"),
        ("source s { use kafka_in; brokers h:1; topics a; group g; subject ev.a; rdkafka.no.such.thing 1; }",
         "No such configuration property"),
        ("source s { use kafka_in; brokers h:1; topics a; group g; subject ev.a; rdkafka.enable.auto.commit true; }",
         "rdkafka.enable.auto.commit: set by gust"),
        ("sink s { use kafka_out; source ev.a; brokers h:1; topic a; rdkafka.acks 1; }", "rdkafka.acks: set by gust"),
        ("sink s { use kafka_out; source ev.a; brokers h:1; topic a; sasl_username u; }",
         "sasl_username needs sasl_password_file"),
        ("sink s { use kafka_out; source ev.a; brokers h:1; topic a; key \"{payload.\"; }", "key:"),
        ("source s { use kafka_in; brokers h:1; topics \"a b\"; group g; subject ev.a; }", "is not a Kafka topic name"),
    ]

    check_config_errors(t, tmp, nats, "kafka", cases, "-t")
    pw = tmp.file("kpw", "secret\n")
    good = ("source s { use kafka_in; brokers 127.0.0.1:9092 [::1]:9093; topics a b; group g; subject ev.a; "
            "rdkafka.session.timeout.ms 30000; rdkafka.fetch.wait.max.ms 50; } "
            "sink o { use kafka_out; source ev.a; brokers 127.0.0.1:9092; topic \"t_{payload.site}\"; "
            "key \"{payload.id}\"; sasl_mechanism SCRAM-SHA-256; sasl_username u; sasl_password_file %s; }" % pw)
    path, p = plugin_check(tmp, nats, "kafka", good, "-t")
    t.eq(p.returncode, 0, "gust -t takes a good pair: %r" % p.stderr[-600:])


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    try:
        test_config_errors(t, tmp, nats)
        test_kill9(t, tmp, nats)
        test_payload_and_headers(t, tmp, nats)
        test_refused(t, tmp, nats)
        test_broker_down(t, tmp, nats)
        test_group_takeover(t, tmp, nats)
    finally:
        nats.stop()
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
