"""An emit the server refuses for good (larger than its max_payload) is a rejection
(issue 24, item 9): logged, counted toward max_deliver, then dead-lettered, where before
it was retried for ever without a word. A dead letter that is itself too large goes
without its payload. A full store or a timeout stays a wait (test_storage)."""
import json
import os
import time

from gustlib import BUILD, Checks, Gust, NatsServer, TempDir, kill_all, wait_for

NATS_CONF = """max_payload: 4096
authorization {
  users = [ { user: gust, password: pw, permissions: { publish: { deny: ["ev.secret", "ev.denied.out"] } } } ]
}
"""
DENIED = 'return { on_event = function(ev) emit("ev.denied.out", ev) end }\n'
SCRIPT = """
return {
  on_event = function(ev)
    emit("ev.big.out", { a = ev.s, b = ev.s })  -- twice the input: over max_payload
  end,
}
"""
CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; user gust; password_file %(pw)s; max_deliver 3; retry_delay 100ms; retry_max_delay 200ms; }
flow big { script %(script)s; source ev.big; }
flow denied { script %(denied)s; source ev.denied; }
"""


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp, conf=NATS_CONF)
    script = tmp.file("big.lua", SCRIPT)
    pw = tmp.file("pw", "pw\n")
    nats.client_args = ["--user", "gust", "--password-file", pw]
    g = Gust(tmp, CONF % {"nats": nats.url, "script": script, "denied": tmp.file("denied.lua", DENIED), "pw": pw})
    ok = False
    try:
        small = json.dumps({"id": "small", "s": "x" * 100}).encode()
        mid = json.dumps({"id": "mid", "s": "y" * 2500}).encode()  # its dead letter fits
        big = json.dumps({"id": "big", "s": "z" * 3900}).encode()  # its dead letter does not
        for body in (small, mid, big):
            st, resp, _ = g.request("POST", "/ingest/big", body=body)
            t.eq(st, 202, "ingest of %d bytes" % len(body))

        def dead():
            return [json.loads(m[2]) for m in nats.read_stream("GUST_DLQ")]

        try:
            wait_for(lambda: len(dead()) >= 2, 20, "two dead letters")
        except AssertionError:
            pass
        letters = {json.loads(d["payload"])["id"] if "payload" in d else "omitted:%d" % d["payload_omitted"]: d
                   for d in dead()}
        print("dead letters: %s" % sorted(letters), flush=True)
        t.check("mid" in letters, "the event whose emit is too large is dead-lettered")
        t.check(("omitted:%d" % len(big)) in letters,
                "the one whose dead letter is too large too is dead-lettered without its payload")
        for d in letters.values():
            t.eq(d["attempts"], 3, "dead-lettered after max_deliver attempts")
            t.check("max_payload" in d["error"], "the error says why: %s" % d["error"])
        t.eq([m["a"][:3] for m in nats.payloads("ev.big.out")], ["xxx"], "the small event went through")
        units = json.loads(g.request("GET", "/units")[1])["units"]
        flow = [u for u in units if u["name"] == "big"][0]
        t.eq(flow["dead_letters"], 2, "dead_letters")
        time.sleep(1.5)
        failed = [u for u in json.loads(g.request("GET", "/units")[1])["units"] if u["name"] == "big"][0]["events_failed"]
        t.eq(failed, 6, "events_failed stops at 2 x max_deliver (no retry for ever)")
        t.check("rejected" in g.log() and "max_payload" in g.log(), "each refusal is logged")

        # Not permitted: at ingest it is "not stored" at once, not an outcome unknown after
        # the PubAck's timeout; an emit is a rejection like a message too large.
        t0 = time.time()
        st, resp, _ = g.request("POST", "/ingest/secret", body=b'{"id":"s"}')
        t.eq((st, json.loads(resp).get("error")), (503, "not stored: not permitted to publish to ev.secret"),
             "ingest to a subject the server does not permit")
        t.check(time.time() - t0 < 3, "answered before the PubAck's timeout (%.1f s)" % (time.time() - t0))
        st, _, _ = g.request("POST", "/ingest/denied", body=b'{"id":"d"}')
        t.eq(st, 202, "ingest of the event whose emit is not permitted")
        try:
            wait_for(lambda: len(dead()) >= 3, 30, "the third dead letter")
        except AssertionError:
            pass
        denied = [d for d in dead() if d["unit"] == "denied"]
        t.eq(len(denied), 1, "the event whose emit is not permitted is dead-lettered")
        t.check(len(denied) == 1 and "not permitted" in denied[0]["error"] and denied[0]["attempts"] == 3,
                "after max_deliver, saying why: %s" % (denied[0] if denied else None))
        ok = t.failed == 0
    finally:
        kill_all([g], nats, failed=not ok)
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
