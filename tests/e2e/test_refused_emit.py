"""An emit the server refuses for good (larger than its max_payload) is a rejection
(issue 24, item 9): logged, counted toward max_deliver, then dead-lettered, where before
it was retried for ever without a word. A dead letter that is itself too large goes
without its payload. A full store or a timeout stays a wait (test_storage)."""
import json
import os
import time

from gustlib import BUILD, Checks, Gust, NatsServer, TempDir, kill_all, wait_for

NATS_CONF = "max_payload: 4096\n"
SCRIPT = """
return {
  on_event = function(ev)
    emit("ev.big.out", { a = ev.s, b = ev.s })  -- twice the input: over max_payload
  end,
}
"""
CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_deliver 3; retry_delay 100ms; retry_max_delay 200ms; }
flow big { script %(script)s; source ev.big; }
"""


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp, conf=NATS_CONF)
    script = tmp.file("big.lua", SCRIPT)
    g = Gust(tmp, CONF % {"nats": nats.url, "script": script})
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
        failed = json.loads(g.request("GET", "/units")[1])["units"][0]["events_failed"]
        t.eq(failed, 6, "events_failed stops at 2 x max_deliver (no retry for ever)")
        t.check("rejected" in g.log() and "max_payload" in g.log(), "each refusal is logged")
        ok = t.failed == 0
    finally:
        kill_all([g], nats, failed=not ok)
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
