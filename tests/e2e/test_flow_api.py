"""The flow API on a running gust against a real nats-server: meta matches the stored
message (subject, seq, time, attempt), require from lua_path (and a reload picks up a
changed module), lookup tables (a changed file picked up by SIGHUP, a broken one keeps
the old generation and names file:line, gust -t checks them), require cannot leave
lua_path, log floods are rate-limited and counted, and gust test-flow -c resolves
modules and tables as a running unit does."""
import base64
import calendar
import json
import os
import signal
import subprocess
import time

from gustlib import GUST, Checks, Gust, NatsServer, TempDir, js_api, wait_for

CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_deliver 3; retry_delay 100ms; }
lua_path lib;
table countries { file data/countries.csv; key code; }
flow meta   { script meta.lua; source ev.m; }
flow enrich { script enrich.lua; source ev.e; }
flow escape { script escape.lua; source ev.x; }
flow noisy  { script noisy.lua; source ev.n; log_rate 20; }
flow own    { script own.lua; source ev.o; lua_path other; }
flow hdr    { script hdr.lua; source ev.h; }
flow hdr2   { script hdr2.lua; source ev.h2; }
relay hr    { source ev.hr; to ev.h2; }
"""

# Emit headers reach the stored message, with the emit's deterministic Nats-Msg-Id, and
# the next flow's meta.headers; through a relay too, which keeps them (but the id: its own).
HDR = """
return { on_event = function(ev)
  emit(ev.relayed and "ev.hr" or "ev.h2", { n = ev.n }, { headers = { ["X-Trace"] = ev.trace } })
end }
"""
HDR2 = """
return { on_event = function(ev, meta) emit("ev.h2.out", { n = ev.n, headers = meta.headers }) end }
"""

META = """
-- Fails each message's first attempt, so the second shows attempt 2.
local failed = {}
return {
  on_event = function(ev, meta)
    if ev.retry and not failed[meta.seq] then
      failed[meta.seq] = true
      error("first attempt fails")
    end
    emit("ev.m.out", { meta = meta, n = ev.n })
  end,
}
"""

ENRICH = """
local fmt = require("fmt")
return {
  on_event = function(ev)
    local c = tables.countries[ev.code]
    emit("ev.e.out", { label = fmt.label(ev.code, c and c.name), rows = #tables.countries, n = ev.n })
  end,
}
"""

ESCAPE = """
local function why(name)
  local ok, err = pcall(require, name)
  return ok and "loaded" or err
end
return {
  on_event = function(ev)
    emit("ev.x.out", { parent = why("../secret"), absolute = why("/etc/passwd"), ffi = why("ffi"),
                       bytecode = why("bc"), package = type(package), io = type(io), os = type(os) })
  end,
}
"""

NOISY = """
return {
  on_event = function(ev)
    for i = 1, 100 do log.warn("line", i, "of event", ev.n) end
  end,
}
"""

OWN = 'return { on_event = function(ev) emit("ev.o.out", { v = require("fmt").label("x", "y") }) end }\n'


def js_msg(port, stream, seq):
    """The stored message seq of stream, from JetStream's API: (subject, data, time in ns)."""
    reply = js_api(port, "STREAM.MSG.GET.%s" % stream, {"seq": seq})
    m = reply["message"]
    stamp, frac = m["time"].rstrip("Z").split(".")
    secs = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S"))
    ns = secs * 10**9 + int(frac.ljust(9, "0")[:9])
    return m["subject"], base64.b64decode(m["data"]), ns


def rfc3339_ms(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("meta.lua", META)
    tmp.file("enrich.lua", ENRICH)
    tmp.file("escape.lua", ESCAPE)
    tmp.file("noisy.lua", NOISY)
    tmp.file("own.lua", OWN)
    tmp.file("hdr.lua", HDR)
    tmp.file("hdr2.lua", HDR2)
    tmp.file("lib/fmt.lua", 'return { label = function(code, name) return code .. ": " .. tostring(name) end }\n')
    tmp.file("other/fmt.lua", 'return { label = function(code, name) return "other " .. code .. name end }\n')
    with open(os.path.join(tmp.path, "lib", "bc.lua"), "wb") as f:
        f.write(b"\x1bLJ\x02\x00\x00\x00")
    tmp.file("data/countries.csv", "code,name\nFR,France\nDE,Germany\n")
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % {"nats": nats.url})

    def outputs(subject):
        return [json.loads(m[2]) for m in nats.read_stream() if m[1] == subject]

    def units():
        return json.loads(g.request("GET", "/units")[1])

    def reload():
        before = units()["reload_count"]
        g.proc.send_signal(signal.SIGHUP)
        return wait_for(lambda: (lambda u: u["reload_count"] > before and u)(units()), 15, "a reload")

    try:
        # Meta: what the script saw is what the stream stored.
        seqs = []
        for n in range(3):
            status, body, _ = g.request("POST", "/ingest/m", json.dumps({"n": n, "retry": n == 2}).encode())
            t.eq(status, 202, "ingest %d" % n)
            seqs.append(json.loads(body)["seq"])
        got = wait_for(lambda: len(outputs("ev.m.out")) >= 3 and outputs("ev.m.out"), 15, "three meta emits")
        for out in got:
            meta, n = out["meta"], out["n"]
            subject, data, ns = js_msg(nats.port, "GUST", seqs[n])
            t.eq(meta["seq"], seqs[n], "meta.seq of event %d" % n)
            t.eq(meta["subject"], subject, "meta.subject of event %d" % n)
            t.eq(json.loads(data)["n"], n, "the stored message is event %d" % n)
            t.eq(meta["time"], ns // 10**6, "meta.time is the stored time in ms (event %d)" % n)
            t.eq(meta["time_rfc3339"], rfc3339_ms(ns // 10**6), "meta.time_rfc3339 (event %d)" % n)
            t.eq(meta["attempt"], 2 if n == 2 else 1, "meta.attempt (event %d)" % n)
            t.eq(meta["unit"], "meta", "meta.unit")
            t.eq(meta["headers"], {}, "meta.headers (ingest stores none yet)")

        # Emit headers, and the id every emit carries.
        status, body, _ = g.request("POST", "/ingest/h", json.dumps({"n": 7, "trace": "t-7"}).encode())
        t.eq(status, 202, "ingest h")
        got = wait_for(lambda: outputs("ev.h2.out"), 15, "the second flow's emit")
        t.eq(got, [{"n": 7, "headers": {"X-Trace": "t-7", "Nats-Msg-Id": "hdr:%d:0" % json.loads(body)["seq"]}}],
             "emit headers and the emit's Nats-Msg-Id in the next flow's meta.headers")
        status, body, _ = g.request("POST", "/ingest/h", json.dumps({"n": 8, "trace": "t-8", "relayed": True}).encode())
        got = wait_for(lambda: len(outputs("ev.h2.out")) >= 2 and outputs("ev.h2.out")[1], 15, "the relayed emit")
        relayed_seq = next(m[0] for m in nats.read_stream() if m[1] == "ev.hr")
        t.eq(got, {"n": 8, "headers": {"X-Trace": "t-8", "Nats-Msg-Id": "hr:%d:0" % relayed_seq}},
             "a relay forwards the headers, with its own Nats-Msg-Id")

        # Modules and tables.
        for n, code in enumerate(["FR", "ES"]):
            t.eq(g.request("POST", "/ingest/e", json.dumps({"n": n, "code": code}).encode())[0], 202, "ingest e")
        got = wait_for(lambda: len(outputs("ev.e.out")) >= 2 and outputs("ev.e.out"), 15, "enrich emits")
        t.eq(sorted((o["n"], o["label"], o["rows"]) for o in got), [(0, "FR: France", 2), (1, "ES: nil", 2)],
             "require from lua_path, and the table's rows")
        t.eq(g.request("POST", "/ingest/o", b"{}")[0], 202, "ingest o")
        got = wait_for(lambda: outputs("ev.o.out"), 15, "own emit")
        t.eq(got, [{"v": "other xy"}], "a flow's own lua_path")

        # A changed module and a changed table, picked up by SIGHUP.
        tmp.file("lib/fmt.lua", 'return { label = function(code, name) return "[" .. code .. "] " .. tostring(name) end }\n')
        tmp.file("data/countries.csv", "code,name\nFR,République française\nDE,Germany\nES,Spain\n")
        u = reload()
        t.eq(u["last_reload_error"], None, "the reload succeeds")
        t.eq(g.request("POST", "/ingest/e", json.dumps({"n": 2, "code": "ES"}).encode())[0], 202, "ingest e 2")
        got = wait_for(lambda: [o for o in outputs("ev.e.out") if o["n"] == 2], 15, "enrich after the reload")
        t.eq(got, [{"n": 2, "label": "[ES] Spain", "rows": 3}], "the new module and table after SIGHUP")

        # A broken table: the reload fails naming file:line, the old generation goes on.
        tmp.file("data/countries.csv", "code,name\nFR,France\nDE,Germany\nFR,again\n")
        u = reload()
        err = u["last_reload_error"] or ""
        t.check("countries.csv:4: duplicate key 'FR' (first at line 2)" in err, "the reload error names file:line: " + err)
        t.check("table 'countries' at " in err and "host.conf:5" in err, "and the table block: " + err)
        t.eq(u["generation"], 2, "still generation 2")
        t.eq(g.request("POST", "/ingest/e", json.dumps({"n": 3, "code": "FR"}).encode())[0], 202, "ingest e 3")
        got = wait_for(lambda: [o for o in outputs("ev.e.out") if o["n"] == 3], 15, "enrich after the failed reload")
        t.eq(got, [{"n": 3, "label": "[FR] République française", "rows": 3}], "the old generation's table")
        p = subprocess.run([GUST, "-t", "-c", g.conf], capture_output=True, text=True)
        t.eq(p.returncode, 1, "gust -t refuses the broken table")
        t.check("countries.csv:4: duplicate key 'FR'" in p.stderr, "gust -t names file:line: " + p.stderr)

        # require cannot leave lua_path.
        t.eq(g.request("POST", "/ingest/x", b"{}")[0], 202, "ingest x")
        got = wait_for(lambda: outputs("ev.x.out"), 15, "escape probe")
        probe = got[0] if got else {}
        t.check("invalid module name '../secret'" in probe.get("parent", ""), "no ..: %r" % probe.get("parent"))
        t.check("invalid module name '/etc/passwd'" in probe.get("absolute", ""), "no absolute path")
        t.check("module 'ffi' not found" in probe.get("ffi", ""), "no C module: %r" % probe.get("ffi"))
        t.check("attempt to load chunk with wrong mode" in probe.get("bytecode", ""), "no bytecode: %r"
                % probe.get("bytecode"))
        t.eq([probe.get(k) for k in ("package", "io", "os")], ["nil", "nil", "nil"], "no package, io or os")

        # A log flood: at most log_rate (20) lines a second get through, the rest are counted.
        for n in range(5):
            t.eq(g.request("POST", "/ingest/n", json.dumps({"n": n}).encode())[0], 202, "ingest n")

        def noisy():
            return [x for x in units()["units"] if x["name"] == "noisy"][0]
        wait_for(lambda: noisy()["events_ok"] >= 5, 15, "the noisy events handled")
        log = noisy()["log"]
        t.eq(log["lines"] + log["dropped"], 500, "every line kept or counted: %r" % log)
        t.check(20 <= log["lines"] < 500 and log["dropped"] > 0, "the flood was cut: %r" % log)
        metrics = g.request("GET", "/metrics")[1].decode()
        t.check('gust_unit_log_dropped_total{unit="noisy",kind="flow"} %d' % log["dropped"] in metrics,
                "/metrics counts the dropped lines")
        wait_for(lambda: "lines dropped (log_rate 20 lines a second)" in g.log(), 15, "the log says lines were dropped")
        t.check("[flow_noisy] seq " in g.log() and ": line 1 of event 0" in g.log(), "log lines name unit and seq")
        events = json.loads(g.request("GET", "/events?unit=noisy")[1])["units"][0]["events"]
        first = [e for e in events if json.loads(e["payload"])["n"] == 0]
        logs = first[0]["logs"] if first else []
        t.check(len(logs) >= 20 and logs[0]["level"] == "warn" and logs[0]["text"] == "line 1 of event 0",
                "/events shows an event's log lines: %r" % logs[:2])
        t.eq(g.stop(), 0, "clean stop")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        nats.stop()
        if t.failed:
            print(g.log()[-6000:])

    # gust test-flow -c: the modules and tables of host.conf, as the unit has them.
    tmp.file("data/countries.csv", "code,name\nFR,France\n")
    case = tmp.file("enrich.case.json", json.dumps({
        "input": {"n": 9, "code": "FR"},
        "expect_emits": [{"subject": "ev.e.out", "payload": {"n": 9, "label": "[FR] France", "rows": 1}}]}))
    p = subprocess.run([GUST, "test-flow", "-c", g.conf, os.path.join(tmp.path, "enrich.lua"), case],
                       capture_output=True, text=True)
    t.eq((p.returncode, p.stdout), (0, "PASS enrich.case\n1 passed, 0 failed\n"), "test-flow -c: " + p.stderr)
    p = subprocess.run([GUST, "test-flow", "-c", g.conf, os.path.join(tmp.path, "own.lua"), tmp.file(
        "own.case.json", json.dumps({"input": {}, "expect_emits": [{"subject": "ev.o.out", "payload": {"v": "other xy"}}]}))],
        capture_output=True, text=True)
    t.eq((p.returncode, p.stdout), (0, "PASS own.case\n1 passed, 0 failed\n"), "test-flow -c: the flow's own lua_path")
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
