"""A flow's durable state on NATS KV, against a real nats-server: a counter over 20 000
events with gust killed -9 at two random points counts each event exactly once; so do
two processes of a cluster sharing the flow, one of them killed -9 mid-run (and they
conflict on the few keys, and retry); a conflict made on purpose is retried and counted;
expiry, delete, a value over the limit (retried, then dead-lettered with the reason),
keys with odd bytes, as stored in the bucket, and a bucket an operator bounded, full."""
import http.client
import json
import os
import random
import signal
import subprocess
import time

from gustlib import (STREAM_READ, Checks, Gust, NatsServer, TempDir, free_port, js_api, kill_all, nats_publish,
                     wait_for)

BUCKET = "GUST_FLOW_STATE"

COUNT = """
return { on_event = function(ev)
  local n = state.incr(ev.device, 1)
  emit("ev.counted", { device = ev.device, n = n, i = ev.i })
end }
"""

CONF = """
node_name %(node)s;
%(cluster)s
http { listen 127.0.0.1:@PORT@; }
nats { url %(url)s; ack_wait 2s; retry_delay 50ms; retry_max_delay 500ms; }
flow count { script %(script)s; source ev.count; batch %(batch)d; }
"""


class Monitor:
    """nats-server's monitor port: the durable consumers' positions."""

    def __init__(self, port):
        self.port = port

    def consumer(self, name):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            c.request("GET", "/jsz?consumers=true")
            doc = json.loads(c.getresponse().read())
        finally:
            c.close()
        for acc in doc.get("account_details", []):
            for st in acc.get("stream_detail", []):
                for con in st.get("consumer_detail", []) or []:
                    if con["name"] == name:
                        return con
        return None

    def acked(self, name):
        """How many deliveries are acked, in consumer order (the ack floor)."""
        con = self.consumer(name)
        return con["ack_floor"]["consumer_seq"] if con is not None else 0

    def settled(self, name):
        con = self.consumer(name)
        return con is not None and con["num_pending"] == 0 and con["num_ack_pending"] == 0


def state_of(nats, unit):
    """{kv key suffix: envelope} of a unit: the last value of each of its keys."""
    prefix = "$KV.%s.%s." % (BUCKET, unit)
    p = subprocess.run([STREAM_READ, nats.url, "KV_" + BUCKET, "--last", prefix + ">"], capture_output=True)
    if p.returncode != 0:
        if b"not found" in p.stderr.lower():
            return {}  # no bucket yet
        raise AssertionError(p.stderr.decode())
    out, i, raw = {}, 0, p.stdout
    while i < len(raw):
        nl = raw.index(b"\n", i)
        _, subject, n = raw[i:nl].split(b" ")
        n = int(n)
        out[subject.decode()[len(prefix):]] = json.loads(raw[nl + 1:nl + 1 + n])
        i = nl + 1 + n + 1
    return out


def counters(nats, unit="count"):
    return {k: env["v"] for k, env in state_of(nats, unit).items() if env["v"] is not None}


def units(g):
    status, body, _ = g.request("GET", "/units")
    assert status == 200, body
    return {u["name"]: u for u in json.loads(body)["units"]}


def events(n, devices, seed):
    rnd = random.Random(seed)
    out, want = [], {}
    for i in range(n):
        d = "dev-%d" % rnd.randrange(devices)
        want[d] = want.get(d, 0) + 1
        out.append(("ev.count", json.dumps({"device": d, "i": i}).encode()))
    return out, want


class SubDir(TempDir):
    """A directory of its own inside tmp (each process its own host.conf)."""

    def __init__(self, tmp, name):
        self.path = os.path.join(tmp.path, name)
        os.makedirs(self.path, exist_ok=True)


def start(tmp, nats, node, script, batch=64, cluster=False):
    conf = CONF % {"node": node, "cluster": "cluster on;" if cluster else "", "url": nats.url, "script": script,
                   "batch": batch}
    return Gust(SubDir(tmp, node), conf)


def emitted_ids(nats):
    return [p["i"] for p in nats.payloads("ev.counted")]


def crash_and_restart(t, tmp):
    """Two kill -9 at random points of 20 000 events; each restart goes on."""
    mport = free_port()
    nats = NatsServer(tmp, args=["-m", str(mport)])
    mon = Monitor(mport)
    script = tmp.file("count.lua", COUNT)
    msgs, want = events(20000, 50, 16)
    rnd = random.Random()
    g = start(tmp, nats, "node-a", script)
    procs = [g]
    try:
        # Published a chunk at a time, a chunk ahead of each kill point, so that every
        # kill comes with work in flight.
        kills = [rnd.randrange(1000, 9000), rnd.randrange(11000, 17000)]
        for first in range(0, len(msgs), 2000):
            nats_publish(nats.port, msgs[first:first + 2000])
            while kills and kills[0] < first - 2000:
                mark = kills.pop(0)
                wait_for(lambda: mon.acked("flow_count") >= mark, 60, "%d acked" % mark)
                g.proc.send_signal(signal.SIGKILL)
                g.proc.wait()
                print("killed with %d of %d acked, %d published" % (mon.acked("flow_count"), len(msgs),
                                                                     first + 2000))
                g = Gust(g.tmp, open(g.conf).read(), port=g.port)
                procs.append(g)
        wait_for(lambda: mon.settled("flow_count"), 90, "every event acked")
        got = counters(nats)
        t.eq(sum(got.values()), len(msgs), "kill -9 twice: events counted")
        t.eq(got, want, "kill -9 twice: every device's counter is exact")
        ids = emitted_ids(nats)
        t.eq(len(ids), len(msgs), "kill -9 twice: one emit per event stored")
        t.eq(len(set(ids)), len(msgs), "kill -9 twice: emits unique")
        st = units(g)["count"]["flow_state"]
        print("after the last restart: %s" % st)
        t.check(st["writes"] > 0 and st["errors"] == 0, "the state counters of the last process: %s" % st)
        # The envelopes: ranges ascending, pruned below the ack floor as values are written.
        env = state_of(nats, "count")["dev-0"]
        t.check(all(lo <= hi for lo, hi in env["a"]), "ranges are [lo, hi]: %s" % env["a"])
        t.eq(env["x"], 0, "no expiry")
    finally:
        if t.failed:
            print(g.log()[-3000:])
        kill_all(procs, nats)


def cluster(t, tmp):
    """Two processes share the flow on 5 keys (they conflict); one is killed -9."""
    mport = free_port()
    nats = NatsServer(tmp, args=["-m", str(mport)])
    mon = Monitor(mport)
    script = tmp.file("count.lua", COUNT)
    msgs, want = events(20000, 5, 17)
    a = start(tmp, nats, "node-a", script, batch=32, cluster=True)
    b = start(tmp, nats, "node-b", script, batch=32, cluster=True)
    procs = [a, b]
    conflicts_a = 0
    try:
        for first in range(0, len(msgs), 2000):
            nats_publish(nats.port, msgs[first:first + 2000])
        wait_for(lambda: mon.acked("flow_count") >= 6000, 60, "6000 acked")
        wait_for(lambda: units(a)["count"]["events_ok"] > 0 and units(b)["count"]["events_ok"] > 0, 30,
                 "both processes take events")
        conflicts_a = units(a)["count"]["flow_state"]["conflicts"]
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait()
        print("node-a killed with %d acked" % mon.acked("flow_count"))
        wait_for(lambda: mon.settled("flow_count"), 120, "every event acked")
        got = counters(nats)
        t.eq(sum(got.values()), len(msgs), "cluster: events counted")
        t.eq(got, want, "cluster: every device's counter is exact")
        ids = emitted_ids(nats)
        t.eq(len(set(ids)), len(msgs), "cluster: every event emitted")
        sb = units(b)["count"]["flow_state"]
        print("cluster: conflicts node-a %d (before the kill), node-b %s" % (conflicts_a, sb))
        t.check(conflicts_a + sb["conflicts"] > 0, "cluster: the processes conflicted on the few keys")
        t.eq(sb["cache_hits"], 0, "cluster on: no cache")
    finally:
        if t.failed:
            print(b.log()[-3000:])
        kill_all(procs, nats)


OPS = """
return { on_event = function(ev, meta)
  if ev.op == "conflict" then
    local v = state.get("c") or 0
    log.info("read c")
    -- Long enough for the test to write c meanwhile (the first attempt only).
    if meta.attempt == 1 then local x = 0 for i = 1, 1e8 do x = x + i end end
    state.set("c", v + 1)
  elseif ev.op == "set" then state.set(ev.k, ev.v, ev.ttl)
  elseif ev.op == "del" then state.del(ev.k)
  elseif ev.op == "big" then state.set("big", string.rep("x", 70000))
  end
  local got = state.get(ev.k or "c")
  emit("ev.ops.out", { n = ev.n, got = got == nil and null or got })
end }
"""

OPS_CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %(url)s; max_deliver 2; retry_delay 50ms; }
flow ops { script %(script)s; source ev.ops; batch 1; timeout 30s; state_cache 0; }
"""


def outputs(nats):
    return {json.loads(m[2])["n"]: json.loads(m[2]) for m in nats.read_stream() if m[1] == "ev.ops.out"}


def edges(t, tmp):
    nats = NatsServer(tmp)
    script = tmp.file("ops.lua", OPS)
    g = Gust(tmp, OPS_CONF % {"url": nats.url, "script": script})
    n = [0]

    def send(**ev):
        n[0] += 1
        ev["n"] = n[0]
        nats_publish(nats.port, [("ev.ops", json.dumps(ev).encode())])
        return n[0]

    try:
        # A conflict: c is written by someone else between the flow's read and its commit.
        send(op="set", k="c", v=1)
        i = send(op="conflict")
        wait_for(lambda: "read c" in g.log(), 20, "the flow read c")
        env = json.dumps({"v": 41, "x": 0, "a": []}).encode()
        nats_publish(nats.port, [("$KV.%s.ops.c" % BUCKET, env)])
        wait_for(lambda: i in outputs(nats), 60, "the conflicting event done")
        t.eq(outputs(nats)[i]["got"], 42, "a conflict is retried on the new value (41 + 1)")
        st = units(g)["ops"]["flow_state"]
        t.eq(st["conflicts"], 1, "the conflict is counted")
        ev = [e for e in json.loads(g.request("GET", "/events?unit=ops")[1])["units"][0]["events"]
              if e.get("error")]
        t.check(any("state conflict on key 'c': retried" in e["error"] for e in ev), "the conflict in /events")

        # Expiry: hidden from messages stored at or after meta.time + ttl.
        i = send(op="set", k="short", v="soon gone", ttl=1)
        wait_for(lambda: i in outputs(nats), 20, "set with ttl")
        t.eq(outputs(nats)[i]["got"], "soon gone", "a value with a ttl, read at once")
        x = state_of(nats, "ops")["short"]["x"]
        t.check(x > 0, "the envelope's expiry: %r" % x)
        wait_for(lambda: time.time() * 1000 > x + 50, 5, "past the expiry")
        i = send(k="short")
        wait_for(lambda: i in outputs(nats), 20, "read after the expiry")
        t.eq(outputs(nats)[i]["got"], None, "an expired value reads as absent")

        # Delete: v null in the bucket, the key reads absent.
        send(op="set", k="gone", v={"a": [1, 2]})
        i = send(op="del", k="gone")
        wait_for(lambda: i in outputs(nats), 20, "delete")
        t.eq(outputs(nats)[i]["got"], None, "a deleted key reads absent")
        t.eq(state_of(nats, "ops")["gone"]["v"], None, "a deletion is an envelope with v null")

        # Over the limit: the script's error, retried, then dead-lettered with the reason.
        i = send(op="big")
        dlq = []
        wait_for(lambda: dlq.extend(m for m in nats.read_stream("GUST_DLQ") if m[1] == "dlq.ops") or dlq, 20,
                 "the big value dead-lettered")
        letter = json.loads(dlq[0][2])
        t.check("more than 65536" in letter["error"], "the reason: %s" % letter["error"])
        t.eq(letter["attempts"], 2, "retried, then dead-lettered")
        t.check("big" not in state_of(nats, "ops"), "nothing written for it")

        # Keys with odd bytes: escaped injectively, read back as themselves.
        odd = ["a.b", "a=2Eb", "sp ace", "caf\u00e9", "\u0001ctl", "*>", "-_"]
        last = 0
        for k in odd:
            last = send(op="set", k=k, v=k)
        wait_for(lambda: last in outputs(nats), 20, "odd keys written")
        for k in odd:
            i = send(k=k)
        wait_for(lambda: i in outputs(nats), 20, "odd keys read")
        got = {o["got"] for o in list(outputs(nats).values())[-len(odd):]}
        t.eq(got, set(odd), "each odd key reads back its own value")
        keys = set(state_of(nats, "ops"))
        for k, want in (("a.b", "a=2Eb"), ("a=2Eb", "a=3D2Eb"), ("sp ace", "sp=20ace"), ("caf\u00e9", "caf=C3=A9"),
                        ("\u0001ctl", "=01ctl"), ("*>", "=2A=3E"), ("-_", "-_")):
            t.check(want in keys, "key %r is stored as %s (have %s)" % (k, want, sorted(keys)))
        status, body, _ = g.request("GET", "/metrics")
        text = body.decode()
        t.check('gust_flow_state_conflicts_total{unit="ops"} 1' in text, "/metrics counts the conflict")
        t.check('gust_flow_state_writes_total{unit="ops"}' in text, "/metrics counts the writes")
        t.eq(g.stop(), 0, "clean stop")
    finally:
        if t.failed:
            print(g.log()[-3000:])
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait()
        nats.stop()


def payload_limit(t, tmp):
    """A value under the flow's limit but over the server's max_payload: the write is
    refused before it is sent, the message retried, then dead-lettered with the reason."""
    conf = tmp.file("small.conf", "max_payload: 2048\n")
    nats = NatsServer(tmp, args=["-c", conf])
    script = tmp.file("ops.lua", OPS.replace('string.rep("x", 70000)', 'string.rep("x", 4000)'))
    g = Gust(SubDir(tmp, "small"), OPS_CONF % {"url": nats.url, "script": script})
    try:
        nats_publish(nats.port, [("ev.ops", json.dumps({"op": "big", "n": 1}).encode())])
        dlq = []
        wait_for(lambda: dlq.extend(m for m in nats.read_stream("GUST_DLQ") if m[1] == "dlq.ops") or dlq, 20,
                 "dead-lettered")
        letter = json.loads(dlq[0][2])
        t.check("state: key 'big' not written: " in letter["error"] and "ayload" in letter["error"],
                "over max_payload: %s" % letter["error"])
        t.eq(letter["attempts"], 2, "over max_payload: retried, then dead-lettered")
    finally:
        if t.failed:
            print(g.log()[-3000:])
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait()
        nats.stop()


def bucket_full(t, tmp):
    """The state bucket bounded by an operator (max_bytes, which a KV bucket enforces by
    refusing writes) and full: the flow's writes fail, the unit says why and retries its
    batches, and /healthz does not say the event stream is full, which it is not; once
    the bound is raised, every event is processed and its emit stored, none dead-lettered.
    (The counts themselves are not compared: nats-server 2.9 lets an update of a key
    that a full bucket holds through and then drops the bucket's oldest values to fit.)"""
    nats = NatsServer(tmp)
    script = tmp.file("count_full.lua", COUNT)
    g = start(tmp, nats, "full", script)
    try:
        nats_publish(nats.port, [("ev.count", json.dumps({"device": "first", "i": -1}).encode())])
        wait_for(lambda: counters(nats).get("first") == 1, 10, "the bucket made by the first write")
        info = js_api(nats.port, "STREAM.INFO.KV_" + BUCKET)
        cfg = info["config"]
        t.eq(cfg.get("discard"), "new", "a KV bucket refuses writes past its bound")
        bound = cfg["max_bytes"]
        cfg["max_bytes"] = info["state"]["bytes"] + 400
        t.check("error" not in js_api(nats.port, "STREAM.UPDATE.KV_" + BUCKET, cfg), "bucket bounded")
        msgs, _ = events(300, 300, 7)
        nats_publish(nats.port, msgs)
        # Its last error is "store full" or, between them, the conflict of a retried write.
        wait_for(lambda: "store full" in (units(g)["count"]["last_error"] or ""), 20,
                 "the unit saying its writes are refused")
        status, body, _ = g.request("GET", "/healthz")
        t.check(b"store_full" not in body, "a full state bucket is not the event stream full: %d %s" % (status, body))
        metrics = g.request("GET", "/metrics")[1].decode()
        t.check("\ngust_store_full 0\n" in metrics, "gust_store_full stays 0")
        cfg["max_bytes"] = bound
        t.check("error" not in js_api(nats.port, "STREAM.UPDATE.KV_" + BUCKET, cfg), "bound raised")
        wait_for(lambda: units(g)["count"]["events_ok"] == 301, 30, "every event processed once the bucket has room")
        t.eq(sorted(p["i"] for p in nats.payloads("ev.counted")), list(range(-1, 300)), "one emit stored per event")
        t.eq(units(g)["count"]["dead_letters"], 0, "none dead-lettered")
    finally:
        kill_all([g], nats, t.failed)


SLOW = """
return { on_event = function(ev, meta)
  if ev.slow and meta.attempt == 1 then
    log.info("slow start")
    local x = 0 for i = 1, 2e9 do x = x + i end
    log.info("slow done")
  end
  if ev.k then state.incr(ev.k, 1) end
  emit("ev.slow.out", { i = ev.i })
end }
"""

SLOW_CONF = """
node_name %(node)s;
cluster on;
http { listen 127.0.0.1:@PORT@; }
nats { url %(url)s; ack_wait 1s; retry_delay 50ms; }
flow slow { script %(script)s; source ev.slow; batch 8; timeout 120s; }
"""


def slow_batch(t, tmp):
    """A batch that outlives ack_wait: its messages go to the other process, which
    counts and acks them, and drops them from the key's ranges at its next write; the
    slow process, reading the key only then, must not count them a second time."""
    mport = free_port()
    nats = NatsServer(tmp, args=["-m", str(mport)])
    mon = Monitor(mport)
    script = tmp.file("slow.lua", SLOW)
    a = Gust(SubDir(tmp, "slow-a"), SLOW_CONF % {"node": "slow-a", "url": nats.url, "script": script})
    procs = [a]
    try:
        first = [{"slow": True, "i": 0}] + [{"k": "K", "i": i} for i in range(1, 6)]
        nats_publish(nats.port, [("ev.slow", json.dumps(e).encode()) for e in first])
        wait_for(lambda: "slow start" in a.log(), 20, "node-a in the slow event")
        b = Gust(SubDir(tmp, "slow-b"), SLOW_CONF % {"node": "slow-b", "url": nats.url, "script": script})
        procs.append(b)
        seqs = [m[0] for m in nats.read_stream() if m[1] == "ev.slow"]
        wait_for(lambda: mon.consumer("flow_slow")["ack_floor"]["stream_seq"] >= seqs[-1], 60,
                 "node-b handled the slow batch's messages")
        more = [{"k": "K", "i": i} for i in range(6, 11)]
        nats_publish(nats.port, [("ev.slow", json.dumps(e).encode()) for e in more])
        wait_for(lambda: counters(nats, "slow").get("K") == 10, 60, "node-b counted the next ones")
        t.check("slow done" not in a.log(), "node-a is still in the slow event (the test's premise)")
        wait_for(lambda: "slow done" in a.log(), 120, "node-a done with the slow event")
        wait_for(lambda: mon.settled("flow_slow") and units(a)["slow"]["events_ok"] + units(a)["slow"]
                 ["events_failed"] > 0, 60, "node-a's batch settled")
        wait_for(lambda: mon.settled("flow_slow"), 60, "everything acked")
        t.eq(counters(nats, "slow").get("K"), 10, "a batch that outlived ack_wait counts nothing twice")
        ev = json.loads(a.request("GET", "/events?unit=slow")[1])["units"][0]["events"]
        t.check(any("acked by another process meanwhile" in (e.get("error") or "") for e in ev),
                "node-a says why it did not write")
    finally:
        if t.failed:
            for p in procs:
                print(p.log()[-2000:])
        kill_all(procs, nats)


def main():
    t = Checks()
    tmp = TempDir()
    try:
        edges(t, tmp)
        payload_limit(t, tmp)
        bucket_full(t, tmp)
        slow_batch(t, tmp)
        crash_and_restart(t, tmp)
        cluster(t, tmp)
    finally:
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
