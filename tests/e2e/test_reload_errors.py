"""A broken host.conf, a Lua syntax error and a VPL error on reload: each is reported with
its location (log and /units) and the running generation keeps serving."""
import json
import signal

from gustlib import Checks, Gust, NatsServer, TempDir, wait_for

FLOW = 'return { source = "ev.in", on_event = function(ev) emit("ev.out", { id = ev.id }) end }\n'
RULES = """
event Ping:
    id: int
stream Pings = Ping.from(Bus, topic: "ev.ping")
stream Seen = Pings.where(id > 0).emit(id: id)
"""
CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; }
flow f { script f.lua; }
detect d { rules d.vpl; }
"""


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("f.lua", FLOW)
    tmp.file("d.vpl", "connector Bus = nats (url: \"x\")\n" + RULES)
    nats = NatsServer(tmp)
    conf = CONF % nats.url
    g = Gust(tmp, conf)
    try:
        def units():
            return json.loads(g.request("GET", "/units")[1])

        def still_serving(n):
            t.eq(g.request("POST", "/ingest/in", b'{"id": %d}' % n)[0], 202, "ingest %d" % n)
            got = wait_for(lambda: [m for m in nats.read_stream() if m[1] == "ev.out" and json.loads(m[2])["id"] == n],
                           10, "flow output %d" % n)
            t.eq(len(got), 1, "the old generation still runs the flow (%d)" % n)

        still_serving(1)
        breakages = [
            ("host.conf", conf.replace("@PORT@", str(g.port)).replace("flow f {", "flow f {\n  scrpit f.lua;"),
             "host.conf:5: unknown key 'scrpit'"),
            ("f.lua", FLOW.replace("emit(", "emit(("), "f.lua:1:"),
            ("d.vpl", "connector Bus = nats (url: \"x\")\n" + RULES.replace("where(id > 0)", "where(id > )"), "d.vpl:6:"),
        ]
        for n, (name, text, where) in enumerate(breakages, start=2):
            good = open(tmp.path + "/" + name).read()
            tmp.file(name, text)
            before = units()["reload_count"]
            g.proc.send_signal(signal.SIGHUP)
            u = wait_for(lambda: (lambda x: x["reload_count"] > before and x)(units()), 10, "reload %s" % name)
            err = u["last_reload_error"] or ""
            t.check(where in err, "%s: %r names %r" % (name, err, where))
            t.check(where in g.log(), "%s: the log names %r" % (name, where))
            t.eq(u["generation"], 1, "%s: still generation 1" % name)
            t.eq(sorted(x["name"] for x in u["units"]), ["d", "f"], "%s: units still listed" % name)
            still_serving(n)
            tmp.file(name, good)
        g.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: units()["generation"] == 2, 10, "a good reload after the broken ones")
        t.eq(units()["last_reload_error"], None, "the error clears on success")
        still_serving(10)
        t.eq(g.stop(), 0, "clean stop")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        nats.stop()
        if t.failed:
            print(g.log()[-3000:])
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
