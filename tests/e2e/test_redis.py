"""The redis plugin against a real redis-server and nats-server: 3000 entries waiting in
a stream go redis_in -> JetStream -> redis_out across a kill -9 of gust (every id comes
out, JetStream holds each once: XACK after the PubAck, Nats-Msg-Id from the entry id,
the dead consumer's pending entries claimed back); redis-server down 10 s mid-run loses
nothing and dead-letters nothing; nats-server killed under redis_in's window of publishes
in flight loses nothing and stores nothing twice; a command Redis refuses (WRONGTYPE) is
dead-lettered with Redis's error; bad settings are refused by gust -t with file:line."""
import json
import os
import signal
import time

from gustlib import (BUILD, Checks, Gust, NatsServer, Redis, TempDir, check_config_errors, nats_publish,
                     plugin_check, wait_for)


CONF = """
plugin_dir %(plugins)s;
plugin redis;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; ack_wait 3s; max_deliver 2; }
source rin_%(tag)s  { use redis_in; url %(redis)s; stream %(sin)s; group gust; subject %(subject)s; claim_idle 2s;
              batch %(batch)d; competing on; }
sink   rout_%(tag)s { use redis_out; source %(subject)s; url %(redis)s; stream %(sout)s; }
"""


def conf(nats, redis, sin, sout, subject, tag, batch=64):
    """Units rin_TAG and rout_TAG: each scenario has its own durable consumer."""
    return CONF % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "redis": redis.url, "sin": sin,
                   "sout": sout, "subject": subject, "tag": tag, "batch": batch}


def dead_letters(nats, unit):
    return [json.loads(d) for _, _, d in nats.read_stream("GUST_DLQ") if ('"unit":"%s"' % unit).encode() in d]


def check_once(t, nats, redis, subject, sout, n, what):
    wait_for(lambda: len(set(redis.ids(sout))) >= n, 90, what + ": every id in " + sout)
    got = redis.ids(sout)
    t.eq(len(set(got)), n, what + ": distinct ids in " + sout)
    t.eq(sorted(set(got)), list(range(n)), what + ": the ids sent")
    js = [p["id"] for p in nats.payloads(subject)]
    t.eq(len(js), n, what + ": JetStream holds each id once (%d duplicates)" % (len(js) - len(set(js))))
    t.eq(len(set(js)), n, what + ": JetStream holds every id")
    print("%s: %d in %s (%d written twice: at least once), %d on the bus" % (what, len(got), sout,
                                                                           len(got) - len(set(got)), len(js)),
          flush=True)


def test_kill9(t, tmp, nats, redis):
    """3000 entries waiting; gust killed with -9 about a second in, then restarted."""
    n = 3000
    redis.xadd_many("s_in", 0, n)
    # Small batches, so that the run lasts long enough for the kill to land in it.
    c = conf(nats, redis, "s_in", "s_out", "ev.redis", "k", batch=8)
    g = Gust(tmp, c)
    try:
        wait_for(lambda: redis.cmd("XLEN", "s_out") >= 200, 30, "the bridge to be flowing")
        # The kill must land where it matters: entries stored in JetStream and not yet
        # XACKed. CLIENT PAUSE WRITE holds gust's next write command (its XACK, or the next
        # XREADGROUP) while the PubAcks come back; when JetStream then holds more of s_in
        # than the group has acked, that window is open: kill -9 there.
        for _ in range(20):
            redis.cmd("CLIENT", "PAUSE", "4000", "WRITE")
            time.sleep(0.5)
            group = redis.cmd("XINFO", "GROUPS", "s_in")[0]  # the one group, as [name, value, ...]
            fields = dict(zip(group[0::2], group[1::2]))
            acked = fields["entries-read"] - fields["pending"]
            stored = len(nats.payloads("ev.redis"))
            if fields["pending"] > 0 and stored > acked:
                break
            redis.cmd("CLIENT", "UNPAUSE")
            time.sleep(0.05)
        g.proc.send_signal(signal.SIGKILL)
        g.proc.wait(10)
        redis.cmd("CLIENT", "UNPAUSE")
        moved = redis.cmd("XLEN", "s_out")
        print("kill -9: %d in s_out, %d pending in the group, %d of them stored in JetStream already"
              % (moved, fields["pending"], stored - acked), flush=True)
        t.check(moved < n and stored > acked, "the kill landed between PubAck and XACK")
        g = Gust(tmp, c)
        check_once(t, nats, redis, "ev.redis", "s_out", n, "kill -9")
        wait_for(lambda: redis.cmd("XPENDING", "s_in", "gust")[0] == 0, 30, "every entry acked")
        t.check("[source:rin_k] claimed " in g.log(), "the dead consumer's pending entries claimed (XAUTOCLAIM)")
        wait_for(lambda: len(redis.cmd("XINFO", "CONSUMERS", "s_in", "gust")) == 1, 20,
                 "the dead consumer removed from the group once nothing of it is pending")
        t.check("[source:rin_k] removed consumer " in g.log(), "the removal logged")
        t.eq(dead_letters(nats, "rout_k"), [], "kill -9: no dead letters")
        # The plugin's own counters, in /units and /metrics.
        units = json.loads(g.request("GET", "/units")[1])["units"]
        plugin = next(u for u in units if u["name"] == "rout_k").get("plugin", {})
        t.eq(plugin.get("connected"), 1, "/units: rout_k connected")
        t.check(plugin.get("written", 0) >= 1, "/units: rout_k counts what it wrote: %r" % plugin)
        metrics = g.request("GET", "/metrics")[1].decode()
        t.check('gust_plugin_value{unit="rout_k",name="written"} ' in metrics, "/metrics: rout_k's counters")
        src = next((x for x in json.loads(g.request("GET", "/units")[1])["sources"] if x["name"] == "rin_k"), {})
        t.eq(src.get("plugin", {}).get("connected"), 1, "/units: rin_k connected")
        t.check(src.get("plugin", {}).get("claimed", 0) >= 1, "/units: rin_k counts the claimed entries: %r" % src)
        t.check('gust_plugin_value{unit="rin_k",name="acked"} ' in metrics, "/metrics: rin_k's counters")
    finally:
        g.stop()
        if t.failed:
            print(g.log()[-3000:])


def test_redis_down(t, tmp, nats, redis):
    """redis-server stopped for 10 s mid-run: both sides wait and reconnect; nothing lost,
    no dead letters, no hot reconnect loop."""
    c = conf(nats, redis, "d_in", "d_out", "ev.down", "d")
    redis.xadd_many("d_in", 0, 1000)
    g = Gust(tmp, c)
    try:
        wait_for(lambda: redis.cmd("XLEN", "d_out") >= 1000, 60, "the first 1000 through")
        redis.stop()
        # While Redis is away: 1000 more reach the bus for redis_out, which must keep them.
        nats_publish(nats.port, [("ev.down", json.dumps({"id": i}).encode()) for i in range(1000, 2000)])
        time.sleep(10)
        body = json.loads(g.request("GET", "/units")[1])
        src = next(x for x in body["sources"] if x["name"] == "rin_d")
        sink = next(x for x in body["units"] if x["name"] == "rout_d")
        t.check(src.get("plugin_error") and sink.get("plugin_error"),
                "/units: both sides say Redis is away: %r %r" % (src.get("plugin_error"), sink.get("plugin_error")))
        redis.start()
        redis.xadd_many("d_in", 2000, 1000)
        wait_for(lambda: len(set(redis.ids("d_out"))) >= 3000, 120, "all 3000 in d_out")
        t.eq(sorted(set(redis.ids("d_out"))), list(range(3000)), "redis down 10 s: every id")
        t.eq(dead_letters(nats, "rout_d"), [], "redis down 10 s: no dead letters")
        body = json.loads(g.request("GET", "/units")[1])
        t.eq([x.get("plugin_error") for x in body["sources"] + body["units"] if x["name"] in ("rin_d", "rout_d")],
             [None, None], "/units: the errors cleared once reconnected")
        log = g.log()
        warns = [l for l in log.splitlines() if "retrying with backoff" in l]
        t.check(1 <= len(warns) <= 6, "one log line per state change, not one per attempt: %r" % warns)
        t.check("[source:rin_d] reconnected to redis" in log and "[sink:rout_d] reconnected to redis" in log,
                "both sides say they reconnected")
    finally:
        g.stop()
        if t.failed:
            print(g.log()[-3000:])


def test_bus_down(t, tmp, nats, redis):
    """nats-server killed while redis_in has a window of publishes in flight, back 3 s
    later: the publishes that failed leave their entries pending, read again once the
    window has drained; every entry ends stored once and acked, none acked unstored."""
    n = 3000
    redis.xadd_many("b_in", 0, n)
    # Small reads and a small window: the run lasts long enough for the kill to land in it.
    c = ("plugin_dir %s;\nplugin redis;\nhttp { listen 127.0.0.1:@PORT@; }\nnats { url %s; }\n"
         "source rin_b { use redis_in; url %s; stream b_in; group gust; subject ev.bus; batch 8; "
         "max_inflight 32; competing on; }\n" % (os.path.join(BUILD, "plugins"), nats.url, redis.url))
    g = Gust(tmp, c)
    try:
        def group():
            grp = redis.cmd("XINFO", "GROUPS", "b_in")[0]
            return dict(zip(grp[0::2], grp[1::2]))

        def counters():
            units = json.loads(g.request("GET", "/units")[1])
            return next(x for x in units["sources"] if x["name"] == "rin_b")["plugin"]
        last = redis.cmd("XREVRANGE", "b_in", "+", "-", "COUNT", "1")[0][0]
        wait_for(lambda: counters()["read"] >= 300, 30, "the source to be flowing")
        nats.kill()
        at_kill = counters()
        time.sleep(3)
        nats.start()
        t0 = time.monotonic()
        wait_for(lambda: group()["last-delivered-id"] == last and group()["pending"] == 0, 60, "every entry acked")
        print("bus down: killed at %d read, %d acked; all acked %.1f s after the restart"
              % (at_kill["read"], at_kill["acked"], time.monotonic() - t0), flush=True)
        t.check(at_kill["read"] < n, "the kill landed mid-run")
        js = [p["id"] for p in nats.payloads("ev.bus")]
        t.eq(len(js), n, "bus down: JetStream holds each id once (%d duplicates)" % (len(js) - len(set(js))))
        t.eq(sorted(set(js)), list(range(n)), "bus down: every id stored")
        end = counters()
        t.check(end["acked"] >= n and end["publish_failed"] >= 1,
                "/units: rin_b acked each entry, after publishes the lost connection failed: %r" % end)
    finally:
        g.stop()
        if t.failed:
            print(g.log()[-3000:])


def test_refused(t, tmp, nats, redis):
    """A key that is not a stream: XADD gets WRONGTYPE, the message is dead-lettered with it."""
    redis.cmd("SET", "w_out", "a string")
    c = conf(nats, redis, "w_in", "w_out", "ev.wrong", "w")
    g = Gust(tmp, c)
    try:
        nats_publish(nats.port, [("ev.wrong", b'{"id":1}')])
        got = wait_for(lambda: dead_letters(nats, "rout_w"), 60, "the refused message in the DLQ")
        t.eq(len(got), 1, "one dead letter")
        t.eq(got[0]["payload"], '{"id":1}', "the message refused")
        t.check("WRONGTYPE" in got[0]["error"], "Redis's error: %r" % got[0]["error"])
        t.eq(redis.cmd("GET", "w_out"), "a string", "the key untouched")
    finally:
        g.stop()
        if t.failed:
            print(g.log()[-3000:])


HDR = """
-- what redis_in's headers say, for the test to read back
return {
  source = "ev.wrap",
  on_event = function(ev, meta)
    emit("ev.hdr", { stream = meta.headers["Redis-Stream"], id = meta.headers["Redis-Entry-Id"] })
  end,
}
"""


def test_payload_and_auth(t, tmp, nats, redis):
    """An ACL user with password_file; the payload rules (field, whole entry, non_json
    reject and wrap); a wrong password is one clear log line without the secret."""
    redis.cmd("ACL", "SETUSER", "alice", "on", ">s3cret-pw", "~*", "&*", "+@all")
    good = tmp.file("pw", "s3cret-pw\n")
    bad = tmp.file("badpw", "not-the-pw\n")
    redis.pipeline([("XADD", "p_in", "*", "data", '{"id":1}'), ("XADD", "p_in", "*", "id", "2", "name", "x"),
                    ("XADD", "p_in", "*", "data", "not json"), ("XADD", "p_in", "*", "body", '{"id":3}'),
                    ("XADD", "q_in", "*", "data", "hello"), ("XADD", "l_in", "*", "data", '{"old":1}')])
    c = """
plugin_dir %(plugins)s;
plugin redis;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; ack_wait 3s; max_deliver 2; }
source pin { use redis_in; url redis://alice@127.0.0.1:%(port)d; password_file %(good)s; stream p_in; group g;
             subject ev.pay; competing on; }
source qin { use redis_in; url redis://127.0.0.1:%(port)d; user alice; password_file %(good)s; stream q_in;
             group g; subject ev.wrap; non_json wrap; competing on; }
source lin { use redis_in; url redis://127.0.0.1:%(port)d; user alice; password_file %(good)s; stream l_in;
             group g; subject ev.latest; start latest; competing on; }
flow hdr { script %(hdr)s; }
source bin { use redis_in; url redis://127.0.0.1:%(port)d/3; user alice; password_file %(bad)s; stream b_in;
             group g; subject ev.never; competing on; }
""" % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "port": redis.port, "good": good, "bad": bad,
       "hdr": tmp.file("hdr.lua", HDR)}
    g = Gust(tmp, c)
    try:
        wait_for(lambda: len(nats.payloads("ev.pay")) >= 3 and nats.payloads("ev.wrap"), 30, "the entries on the bus")
        time.sleep(0.5)
        t.eq(nats.payloads("ev.pay"), [{"id": 1}, {"id": "2", "name": "x"}, {"body": '{"id":3}'}],
             "field data, else the whole entry as an object of strings; not JSON rejected")
        w = nats.payloads("ev.wrap")
        t.eq(len(w), 1, "one wrapped message")
        t.eq((w[0].get("payload_base64"), w[0].get("stream")), ("aGVsbG8=", "q_in"), "non_json wrap: %r" % w)
        h = wait_for(lambda: nats.payloads("ev.hdr"), 10, "the flow's view of the headers")
        t.eq(h, [{"stream": "q_in", "id": w[0].get("id")}], "headers Redis-Stream and Redis-Entry-Id in meta.headers")
        wait_for(lambda: redis.cmd("XPENDING", "p_in", "g")[0] == 0, 10, "every entry acked, the rejected one too")
        src = {x["name"]: x["plugin"] for x in json.loads(g.request("GET", "/units")[1])["sources"]}
        t.eq(src["pin"]["rejected"], 1, "/units counts the rejected entry")
        t.eq(src["bin"]["connected"], 0, "the wrong password: not connected")
        wait_for(lambda: "[source:lin] created consumer group g on stream l_in (from new entries)" in g.log(), 10,
                 "the group of lin created at $")
        redis.cmd("XADD", "l_in", "*", "data", '{"new":2}')
        wait_for(lambda: nats.payloads("ev.latest"), 10, "the new entry of l_in")
        time.sleep(0.5)
        t.eq(nats.payloads("ev.latest"), [{"new": 2}], "start latest: only what came after the group")
        wait_for(lambda: "WRONGPASS" in g.log(), 10, "the refusal in the log")
        time.sleep(2)
        lines = [l for l in g.log().splitlines() if "[source:bin]" in l and "WRONGPASS" in l]
        t.eq(len(lines), 1, "one log line for the refused AUTH, not one per attempt: %r" % lines)
        t.check("not-the-pw" not in g.log() and "s3cret-pw" not in g.log(), "no password in the log")
    finally:
        g.stop()
        if t.failed:
            print(g.log()[-3000:])


def test_config_errors(t, tmp, nats):
    cases = [
        ("source s { use redis_in; url redis://127.0.0.1:1; stream a; subject ev.a; }", "group"),
        ("source s { use redis_in; url redis://127.0.0.1:1; stream a; group g; subject ev.a; colour red; }",
         "colour"),
        ("source s { use redis_in; url http://127.0.0.1:1; stream a; group g; subject ev.a; }",
         "url must be a URL of scheme redis|rediss in source 's'"),
        ("sink s { use redis_out; source ev.a; url redis://127.0.0.1:99999; stream a; }", "invalid URL for 'url'"),
        ("sink s { use redis_out; source ev.a; url rediss://127.0.0.1:6380; stream a; }",
         "url: TLS (rediss://) needs hiredis 1.0 or newer"),
        ("sink s { use redis_out; source ev.a; url redis://:secret@127.0.0.1; stream a; }", "use password_file"),
        ("source s { use redis_in; url redis://127.0.0.1:1; stream a; group g; subject ev.a; claim_idle 10ms; }",
         "claim_idle"),
        ("source s { use redis_in; url redis://127.0.0.1:1; stream a; group g; subject ev.a; start middle; }",
         "start"),
        ("sink s { use redis_out; source ev.a; url redis://u@127.0.0.1; stream a; }", "a user needs a password_file"),
    ]

    check_config_errors(t, tmp, nats, "redis", cases, "-t")
    path, p = plugin_check(tmp, nats, "redis",
                           "source s { use redis_in; url redis://127.0.0.1:1/2; stream a; group g; subject ev.a; } "
                           "sink o { use redis_out; source ev.a; url redis://127.0.0.1; stream b; maxlen 1000; }", "-t")
    t.eq(p.returncode, 0, "gust -t takes a good pair: %r" % p.stderr[-600:])


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    redis = Redis(tmp)
    try:
        test_config_errors(t, tmp, nats)
        test_kill9(t, tmp, nats, redis)
        test_redis_down(t, tmp, nats, redis)
        test_bus_down(t, tmp, nats, redis)
        test_refused(t, tmp, nats, redis)
        test_payload_and_auth(t, tmp, nats, redis)
    finally:
        redis.stop()
        nats.stop()
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
