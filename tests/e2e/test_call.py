"""Request/reply through a flow, against a real nats-server: POST /call/calc with {"n": 21}
answers 200 {"answer": 42}; a status given to reply() is used; a call no flow replies to
answers 504 after about call_timeout (2s by default) and its event is stored and
processed; a repeated Idempotency-Key is 409; a reply made by a run that then fails is not sent, the redelivery's is; reply()
outside a call does nothing and says so in the event's log; the ingest token applies to
/call; call_timeout changes on reload; a webhook with `respond flow` answers a Slack-like slash command with the flow's
reply; and across two processes of a cluster: the one holding the HTTP request runs no
flow at all, the other's flow replies through NATS."""
import json
import signal
import time

from gustlib import Checks, Gust, NatsServer, TempDir, kill_all, wait_for

TOKEN = "call-t0ken"
AUTH = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}

FLOWS = {
    "calc": 'return { on_event = function(ev) reply({ answer = ev.n * 2 }) end }',
    "created": 'return { on_event = function(ev) reply({ id = ev.id }, 201) end }',
    "silent": 'return { on_event = function(ev) emit("ev.silent.done", { n = ev.n }) end }',
    # The first attempt replies, then fails: only the redelivery's reply may be sent.
    "flaky": """return { on_event = function(ev, meta)
  reply({ attempt = meta.attempt })
  if meta.attempt == 1 then error("the first attempt fails") end
end }""",
    "slash": 'return { on_event = function(ev) reply({ response_type = "ephemeral", text = "weather for " .. ev.text }) end }',
}

CONF = """
http { listen 127.0.0.1:@PORT@; ingest_token_env GUST_E2E_CALL_TOKEN; }
nats { url %(nats)s; retry_delay 100ms; }
%(flows)s
webhook slash { path /hooks/slash; subject ev.slash; respond flow; }
"""

# A second process of the cluster: the front only, no unit at all.
FRONT = """
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; }
"""


def call(g, path, body, headers=AUTH):
    t0 = time.monotonic()
    status, out, _ = g.request("POST", path, body=body if isinstance(body, bytes) else json.dumps(body).encode(),
                               headers=headers)
    try:
        out = json.loads(out)
    except ValueError:
        pass
    return status, out, time.monotonic() - t0


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    procs = []
    try:
        flows = "\n".join(
            "flow %s { script %s; source ev.%s; }" % (name, tmp.file(name + ".lua", text), name)
            for name, text in FLOWS.items())
        a = Gust(tmp, CONF % {"nats": nats.url, "flows": flows}, env={"GUST_E2E_CALL_TOKEN": TOKEN})
        procs.append(a)

        status, out, _ = call(a, "/call/calc", {"n": 21})
        t.eq((status, out), (200, {"answer": 42}), "/call/calc answers the flow's reply")
        status, out, _ = call(a, "/call/created", {"id": "x-1"})
        t.eq((status, out), (201, {"id": "x-1"}), "the status given to reply() is the answer's")

        status, out, took = call(a, "/call/silent", {"n": 7})
        t.eq((status, out), (504, {"error": "no reply within 2s"}), "no reply: 504 naming call_timeout")
        t.check(1.8 <= took < 8, "the 504 came after about call_timeout (%.2f s)" % took)
        t.eq(nats.payloads("ev.silent"), [{"n": 7}], "the event of an unanswered call is stored")
        wait_for(lambda: nats.payloads("ev.silent.done") == [{"n": 7}], 10, "the unanswered call's event processed")

        keyed = dict(AUTH, **{"Idempotency-Key": "call-k1"})
        status, out, _ = call(a, "/call/calc", {"n": 2}, headers=keyed)
        t.eq((status, out), (200, {"answer": 4}), "a call with an Idempotency-Key")
        status, out, _ = call(a, "/call/calc", {"n": 2}, headers=keyed)
        t.eq(status, 409, "its repeat is stored once and says so: the reply went to the first (%s)" % out)

        status, out, _ = call(a, "/call/flaky", {"n": 1})
        t.eq((status, out), (200, {"attempt": 2}), "a failed run's reply is not sent; the redelivery's is")

        status, out, _ = call(a, "/call/calc", {"n": 1}, headers={"Content-Type": "application/json"})
        t.eq(status, 401, "the ingest token applies to /call")
        status, out, _ = call(a, "/call/calc", b"not json")
        t.eq(status, 400, "a body that is not a JSON object: 400, as ingest")
        status, out, _ = call(a, "/call/calc", b"")
        t.eq(status, 400, "an empty body: 400")

        # reply() outside a call: nothing sent, a line in the event's log.
        status, _, _ = a.request("POST", "/ingest/calc", body=b'{"n": 5}', headers=AUTH)
        t.eq(status, 202, "the same flow's event through ingest")

        def warned():
            status, body, _ = a.request("GET", "/events?unit=calc")
            return status == 200 and b"reply: not a call" in body
        wait_for(warned, 10, "reply outside a call logged with its event")

        # A webhook that answers with its flow's reply, as a Slack slash command wants.
        status, out, _ = call(a, "/hooks/slash", b"command=%2Fweather&text=paris",
                              headers={"Content-Type": "application/x-www-form-urlencoded",
                                       "Authorization": "Bearer " + TOKEN})
        t.eq((status, out), (200, {"response_type": "ephemeral", "text": "weather for paris"}),
             "respond flow: the webhook answers with the flow's reply")

        # call_timeout is reloadable.
        with open(a.conf) as f:
            text = f.read()
        with open(a.conf, "w") as f:
            f.write(text.replace("ingest_token_env", "call_timeout 500ms; ingest_token_env"))
        a.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: json.loads(a.request("GET", "/units")[1])["reload_count"] >= 1, 10, "the reload")
        status, out, took = call(a, "/call/silent", {"n": 8})
        t.eq((status, out), (504, {"error": "no reply within 500ms"}), "a reloaded call_timeout")
        t.check(took < 1.8, "the reloaded call_timeout is used (%.2f s)" % took)

        # A cluster: b holds the request, a runs the flow; the reply crosses NATS.
        b = Gust(tmp, FRONT % {"nats": nats.url})
        procs.append(b)
        status, out, _ = call(b, "/call/calc", {"n": 21})
        t.eq((status, out), (200, {"answer": 42}), "/call on a process without the flow: the peer's flow replies")
        calls = a.log().count("reply not sent") + b.log().count("reply not sent")
        t.eq(calls, 0, "every reply was sent")
    except Exception:
        kill_all(procs, nats, failed=True)
        raise
    kill_all(procs, nats, failed=t.failed > 0)
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
