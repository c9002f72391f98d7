"""Shadow replay, against a real nats-server: `gust replay` and POST /replay run a flow's
current script and a candidate over the stored events of its source. A candidate that
changes one field on a third of the events is reported with exactly those differences;
an identical one with none (both read the live state, each keeps its own writes); the
ranges (--last, --from-seq, --since) count the source's events only; the durable
consumer, the event stream and the state bucket are untouched; errors are clear."""
import http.client
import json
import os
import subprocess
import time

from gustlib import GUST, Checks, Gust, NatsServer, TempDir, free_port, nats_publish, read_stream, wait_for

N = 300
TOKEN = "replay-secret"

CURRENT = """
return { source = "ev.orders", on_event = function(ev, meta)
  local seen = state.incr("seen", 1)
  emit("ev.orders.out", { id = ev.i, label = "L" .. (ev.i % 5), seen = seen, at = meta.time })
end }
"""

# The same, written differently.
SAME = """
local function label(i) return "L" .. (i % 5) end
return { on_event = function(ev, meta)
  local n = state.incr("seen")
  emit("ev.orders.out", { at = meta.time, seen = n, label = label(ev.i), id = ev.i })
end }
"""

THIRD = """
return { on_event = function(ev, meta)
  local seen = state.incr("seen", 1)
  local label = ev.i % 3 == 0 and "changed" or "L" .. (ev.i % 5)
  emit("ev.orders.out", { id = ev.i, label = label, seen = seen, at = meta.time })
end }
"""

BROKEN = "return { on_event = function(ev) emit( end }"

CONF = """
http { listen 127.0.0.1:@PORT@; admin_token_env GUST_TEST_ADMIN; }
nats { url %(url)s; }
flow orders { script %(script)s; }
"""


def monitor(mport, name):
    c = http.client.HTTPConnection("127.0.0.1", mport, timeout=5)
    try:
        c.request("GET", "/jsz?consumers=true")
        doc = json.loads(c.getresponse().read())
    finally:
        c.close()
    for acc in doc.get("account_details", []):
        for st in acc.get("stream_detail", []):
            for con in st.get("consumer_detail", []) or []:
                if con["name"] == name:
                    pos = {k: con[k] for k in ("delivered", "ack_floor", "num_pending", "num_ack_pending",
                                               "num_redelivered")}
                    for k in ("delivered", "ack_floor"):
                        pos[k] = {"consumer_seq": pos[k]["consumer_seq"], "stream_seq": pos[k]["stream_seq"]}
                    return pos
    return None


def replay(tmp, conf, *args):
    p = subprocess.run([GUST, "replay", "-c", conf, "--unit", "orders"] + list(args), capture_output=True,
                       text=True, timeout=120)
    summary = None
    for line in p.stdout.splitlines():
        if line.startswith("summary: "):
            summary = json.loads(line[len("summary: "):])
    return p.returncode, summary, p.stdout, p.stderr


def diff_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def post(g, body, token=TOKEN):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    status, data, _ = g.request("POST", "/replay", json.dumps(body).encode(), headers, timeout=120)
    return status, json.loads(data)


def main():
    t = Checks()
    tmp = TempDir()
    mport = free_port()
    nats = NatsServer(tmp, args=["-m", str(mport)])
    script = tmp.file("orders.lua", CURRENT)
    cand_same = tmp.file("same.lua", SAME)
    cand_third = tmp.file("third.lua", THIRD)
    cand_broken = tmp.file("broken.lua", BROKEN)
    g = Gust(tmp, CONF % {"url": nats.url, "script": script}, env={"GUST_TEST_ADMIN": TOKEN})
    conf = g.conf
    try:
        # The source's events, with other traffic between them.
        msgs = []
        for i in range(N):
            msgs.append(("ev.orders", json.dumps({"i": i}).encode()))
            if i % 4 == 0:
                msgs.append(("ev.noise", b'{"noise":true}'))
        nats_publish(nats.port, msgs)
        wait_for(lambda: (monitor(mport, "flow_orders") or {}).get("num_pending") == 0 and
                 monitor(mport, "flow_orders")["num_ack_pending"] == 0, 30, "the unit handled every event")
        order_seqs = {json.loads(m[2])["i"]: m[0] for m in nats.read_stream() if m[1] == "ev.orders"}
        # The consumer has also looked past the unit's own emits (other subjects) by then.
        wait_for(lambda: monitor(mport, "flow_orders")["delivered"]["stream_seq"] >= nats.count(), 10,
                 "the consumer's position settled")
        before = monitor(mport, "flow_orders")
        stream_before = nats.count()
        state_before = read_stream(nats.url, "KV_GUST_FLOW_STATE")

        # A third differs, in exactly one field.
        diff = os.path.join(tmp.path, "diff.jsonl")
        rc, s, out, err = replay(tmp, conf, "--script", cand_third, "--last", str(N), "--diff", diff)
        t.eq(rc, 1, "a differing candidate exits 1 (%s)" % err.strip())
        t.eq((s or {}).get("inputs"), N, "every stored event of the source is an input")
        t.eq((s or {}).get("differing"), N // 3, "a third differs")
        t.eq((s or {}).get("identical"), N - N // 3, "the rest are identical")
        t.eq((s or {}).get("errors"), {"current": 0, "candidate": 0}, "no errors")
        lines = diff_lines(diff)
        want = sorted(order_seqs[i] for i in range(N) if i % 3 == 0)
        t.eq([d["seq"] for d in lines], want, "the diff names exactly the events a third of them")
        t.check(all(d["difference"] == "emit 1: payload differs at .label" for d in lines),
                "each difference is the one field: %s" % (lines[0]["difference"] if lines else None))
        if lines:
            d = lines[0]
            cur, cand = d["current"]["emits"][0]["payload"], d["candidate"]["emits"][0]["payload"]
            t.eq(cand["label"], "changed", "the candidate's value in the diff")
            t.eq({k: v for k, v in cur.items() if k != "label"}, {k: v for k, v in cand.items() if k != "label"},
                 "the other fields agree")
            t.eq(cur["seen"], N + 1, "the first event reads the live state (%d) and adds one" % N)
        t.check("first differences:" in out and "current:" in out and "candidate:" in out,
                "the first differences side by side:\n" + out)

        # The same script written otherwise: nothing differs (each side keeps its own writes).
        rc, s, out, err = replay(tmp, conf, "--script", cand_same, "--last", str(N))
        t.eq(rc, 0, "an identical candidate exits 0 (%s)" % err.strip())
        t.eq((s or {}).get("differing"), 0, "an identical candidate: 0 differences")
        t.eq((s or {}).get("identical"), N, "an identical candidate: every input identical")

        # Ranges: the last 10, from a sequence, since a time.
        rc, s, _, _ = replay(tmp, conf, "--script", cand_third, "--last", "10")
        t.eq(((s or {}).get("inputs"), (s or {}).get("from_seq")), (10, order_seqs[N - 10]), "--last 10")
        rc, s, _, _ = replay(tmp, conf, "--script", cand_same, "--from-seq", str(order_seqs[250]))
        t.eq((s or {}).get("inputs"), 50, "--from-seq: from that event on")
        rc, s, _, _ = replay(tmp, conf, "--script", cand_same, "--since", "1h")
        t.eq((s or {}).get("inputs"), N, "--since 1h: all of them")
        rc, s, _, _ = replay(tmp, conf, "--script", cand_same, "--since", "2099-01-01T00:00:00Z")
        t.eq(((s or {}).get("inputs"), rc), (0, 0), "--since the future: none")

        # POST /replay: the same, with the script's text.
        status, body = post(g, {"unit": "orders", "script": THIRD, "last": N})
        t.eq(status, 200, "POST /replay: %s" % body.get("error"))
        t.eq(body.get("summary", {}).get("differing"), N // 3, "POST /replay: a third differs")
        t.eq([d["seq"] for d in body.get("diff", [])], want, "POST /replay: the diff")
        status, body = post(g, {"unit": "orders", "script_path": cand_same, "from_seq": 1, "max_diff": 5})
        t.eq((status, body.get("summary", {}).get("differing")), (200, 0), "POST /replay with script_path")
        status, body = post(g, {"unit": "orders", "script": THIRD, "max_diff": 5})
        t.eq((len(body.get("diff", [])), body.get("diff_omitted")), (5, N // 3 - 5), "max_diff bounds the diff")

        # Errors.
        status, body = post(g, {"unit": "orders", "script": THIRD}, token=None)
        t.eq(status, 401, "POST /replay needs the admin token")
        status, body = post(g, {"unit": "nosuch", "script": THIRD})
        t.eq((status, body.get("error")), (404, "no flow unit 'nosuch'"), "an unknown unit")
        status, body = post(g, {"unit": "orders", "script": BROKEN})
        t.check(status == 400 and "candidate script" in body.get("error", "") and "candidate.lua:1" in body["error"],
                "a candidate that does not load: %s %s" % (status, body))
        status, body = post(g, {"unit": "orders", "script": THIRD, "last": 5, "from_seq": 3})
        t.eq(status, 400, "two ranges are refused")
        status, _, _ = g.request("GET", "/replay", headers={"Authorization": "Bearer " + TOKEN})
        t.eq(status, 405, "GET /replay")
        rc, s, out, err = replay(tmp, conf, "--script", cand_broken)
        t.check(rc == 2 and "broken.lua:1" in err, "gust replay: a broken candidate exits 2 naming it: %s" % err)
        rc, s, out, err = replay(tmp, conf, "--script", cand_same, "--last", "0")
        t.eq(rc, 2, "gust replay --last 0 is refused")

        # Untouched: the durable consumer, the stream, the state.
        t.eq(monitor(mport, "flow_orders"), before, "the durable consumer's position is unchanged")
        t.eq(nats.count(), stream_before, "nothing was published")
        t.eq(read_stream(nats.url, "KV_GUST_FLOW_STATE"), state_before, "no state was written")
        t.eq(g.stop(), 0, "clean stop")
    finally:
        if t.failed:
            print(g.log()[-3000:])
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait()
        nats.stop()
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
