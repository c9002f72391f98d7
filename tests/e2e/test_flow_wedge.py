"""A flow cannot wedge the process (issue 24, item 2). A flow whose event runs a
pattern match that backtracks for ever (string.find(string.rep("a", 5000), ".-.-.-.-b"))
beside a working flow: the working one keeps handling its events, the stuck event fails
at its timeout like any Lua error (retried, then dead-lettered), and the stuck flow
handles its next events. Then, each while the flow is stuck again: SIGHUP finishes (the
new generation shows in /units) and SIGTERM exits, both within the timeout plus 2 s
(plus a margin for this loaded machine)."""
import json
import signal
import time

from gustlib import Checks, Gust, NatsServer, TempDir, kill_all, wait_for

TOKEN = "wedge-admin-token"
TIMEOUT_S = 1
MARGIN_S = 2.5  # the machine is shared and loaded
STUCK = """
local P = ".-.-.-.-b"
return {
  source = "ev.stuck",
  on_event = function(ev)
    if ev.mode == "wedge" then
      local s = string.rep("a", 5000)
      s:find(P)                -- the method form
      string.match(s, P)
    end
    emit("ev.stuck.out", { id = ev.id })
  end,
}
"""
WEDGE_ALL = """
return { on_event = function(ev) string.gsub(string.rep("a", 5000), ".-.-.-.-b", "") end }
"""
GOOD = """
return {
  source = "ev.good",
  on_event = function(ev) emit("ev.good.out", { id = ev.id }) end,
}
"""
CONF = """
http { listen 127.0.0.1:@PORT@; admin_token_env GUST_TEST_ADMIN; }
nats { url %s; max_deliver 3; retry_delay 100ms; retry_max_delay 200ms; }
flow stuck { script stuck.lua; timeout %ds; batch 4; }
flow good { script good.lua; }
"""


def units(g):
    status, body, _ = g.request("GET", "/units", headers={"Authorization": "Bearer " + TOKEN})
    return json.loads(body)


def unit(g, name):
    return next(u for u in units(g)["units"] if u["name"] == name)


def post(g, subject, obj):
    status = g.request("POST", "/ingest/" + subject, body=json.dumps(obj).encode())[0]
    assert status == 202, status


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("stuck.lua", STUCK)
    tmp.file("good.lua", GOOD)
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % (nats.url, TIMEOUT_S), env={"GUST_TEST_ADMIN": TOKEN})
    try:
        # The wedge, then the working flow's events while it is stuck.
        post(g, "stuck", {"id": "w1", "mode": "wedge"})
        time.sleep(0.3)
        for i in range(20):
            post(g, "good", {"id": i})
        good_done = wait_for(lambda: len(nats.payloads("ev.good.out")) >= 20, 15, "20 events through the good flow")
        t.check(good_done, "the working flow handled its events while the other was stuck")
        # The stuck event: 3 attempts, each ended by the timeout, then the dead letter.
        wait_for(lambda: unit(g, "stuck")["dead_letters"] >= 1, 30, "the stuck event dead-lettered")
        u = unit(g, "stuck")
        t.eq(u["dead_letters"], 1, "dead letters of the stuck flow")
        t.check(u["events_failed"] >= 3, "each attempt failed (%r)" % u["events_failed"])
        t.check("timeout" in (u["last_error"] or ""), "last_error says timeout: %r" % u["last_error"])
        dlq = nats.payloads("dlq.stuck", stream="GUST_DLQ")
        t.eq(len(dlq), 1, "dead letters on dlq.stuck")
        t.check(dlq and "timeout: the script ran longer than 1000 ms" in json.dumps(dlq[0]),
                "the dead letter says why: %r" % (dlq[:1],))
        # The stuck flow goes on with its next events.
        post(g, "stuck", {"id": "n1"})
        wait_for(lambda: len(nats.payloads("ev.stuck.out")) >= 1, 10, "the stuck flow's next event")
        t.eq([p["id"] for p in nats.payloads("ev.stuck.out")], ["n1"], "what the stuck flow emitted")

        # /replay runs under the same bounds: the current script times out on w1, a
        # candidate stuck on every input on both; the answer comes after those timeouts.
        t0 = time.monotonic()
        status, body, _ = g.request("POST", "/replay",
                                    json.dumps({"unit": "stuck", "script": WEDGE_ALL, "last": 2}).encode(),
                                    {"Content-Type": "application/json", "Authorization": "Bearer " + TOKEN},
                                    timeout=60)
        took = time.monotonic() - t0
        print("/replay of a stuck candidate: %d after %.2f s: %s" % (status, took, body[:300]))
        t.eq(status, 200, "/replay answers")
        summary = json.loads(body).get("summary", {}) if status == 200 else {}
        t.eq(summary.get("errors"), {"current": 1, "candidate": 2}, "/replay's errors (the timeouts)")
        t.check(took <= 3 * TIMEOUT_S + 2 + MARGIN_S, "/replay answered in %.1f s" % took)

        # A candidate stuck on every input ends the replay at its third timeout.
        for i in (2, 3, 4):
            post(g, "stuck", {"id": "n%d" % i})
        wait_for(lambda: len(nats.payloads("ev.stuck.out")) >= 4, 10, "the stuck flow's events n2..n4")
        t0 = time.monotonic()
        status, body, _ = g.request("POST", "/replay",
                                    json.dumps({"unit": "stuck", "script": WEDGE_ALL, "last": 5}).encode(),
                                    {"Content-Type": "application/json", "Authorization": "Bearer " + TOKEN},
                                    timeout=60)
        took = time.monotonic() - t0
        print("/replay of 5 inputs, stuck on each: %d after %.2f s: %s" % (status, took, body[:200]))
        t.eq(status, 400, "/replay of a candidate that keeps timing out")
        t.check(b"candidate script: ran past its timeout (1000 ms) on 3 inputs" in body, "why: %r" % body[:300])
        t.check(took <= 4 * TIMEOUT_S + 2 + MARGIN_S, "/replay stopped in %.1f s" % took)

        # SIGHUP while the flow is stuck: the reload finishes within the bound.
        gen = units(g)["generation"]
        post(g, "stuck", {"id": "w2", "mode": "wedge"})
        time.sleep(0.4)
        t0 = time.monotonic()
        g.proc.send_signal(signal.SIGHUP)
        reloaded = wait_for(lambda: units(g)["generation"] == gen + 1, TIMEOUT_S + 2 + MARGIN_S + 5,
                            "generation + 1")
        took = time.monotonic() - t0
        print("SIGHUP while stuck: generation + 1 after %.2f s" % took)
        t.check(reloaded and took <= TIMEOUT_S + 2 + MARGIN_S, "SIGHUP finished in %.1f s" % took)
        post(g, "good", {"id": 100})
        t.check(wait_for(lambda: len(nats.payloads("ev.good.out")) >= 21, 10, "the good flow after the reload"),
                "the good flow works after the reload")

        # SIGTERM while the flow is stuck: the process exits within the bound.
        post(g, "stuck", {"id": "w3", "mode": "wedge"})
        time.sleep(0.4)
        t0 = time.monotonic()
        g.proc.send_signal(signal.SIGTERM)
        try:
            g.proc.wait(TIMEOUT_S + 2 + MARGIN_S + 10)
        except Exception:
            pass
        took = time.monotonic() - t0
        print("SIGTERM while stuck: exit after %.2f s" % took)
        t.check(g.proc.poll() is not None and took <= TIMEOUT_S + 2 + MARGIN_S, "SIGTERM exited in %.1f s" % took)
    except Exception as e:  # any failure still ends with the processes stopped
        t.check(False, "%s: %s" % (type(e).__name__, e))
    failed = t.failed > 0
    kill_all([g], nats, failed)
    t.done()


if __name__ == "__main__":
    main()
