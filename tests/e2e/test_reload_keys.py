"""What a reload may change, decided by the schemas' reloadable flags: a rotated admin or
ingest token takes effect at SIGHUP (the old one is refused from then on), and so do
new limits, trusted proxies and log settings. A reload that changes a restart-only key
is refused, naming the key and its file:line, and the running generation keeps serving;
so is one whose new token file is missing. The stream's subject prefix is read from
`subjects` wherever a subject is built (ingest, the detect defaults)."""
import json
import signal

from gustlib import Checks, Gust, NatsServer, TempDir, wait_for

CONF = """
log_level debug;
http { listen 127.0.0.1:@PORT@; admin_token_file %(tmp)s/admin.token; ingest_token_file %(tmp)s/ingest.token;
       max_body %(max_body)s; %(proxies)s }
nats { url %(nats)s; stream %(stream)s; }
"""

RULES = """connector Bus = nats (url: "x")
event Ping:
    id: int
stream Pings = Ping.from(Bus)
stream Seen = Pings.where(id > 0).emit(id: id)
"""


def bearer(token):
    return {"Authorization": "Bearer " + token}


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    tmp.file("admin.token", "admin-one\n")
    tmp.file("ingest.token", "ingest-one\n")
    values = {"tmp": tmp.path, "nats": nats.url, "stream": "GUST", "max_body": "4k", "proxies": ""}
    g = Gust(tmp, CONF % values)

    def write_conf(**kw):
        v = dict(values, **kw)
        tmp.file("host.conf", (CONF % v).replace("@PORT@", str(g.port)))

    def units(token):
        status, body, _ = g.request("GET", "/units", headers=bearer(token))
        return json.loads(body) if status == 200 else None

    def reload_and_wait(token, count):
        g.proc.send_signal(signal.SIGHUP)
        return wait_for(lambda: (lambda u: u is not None and u["reload_count"] >= count and u)(units(token)), 10,
                        "reload %d" % count)

    def ingest(token, body=b'{"a":1}', path="/ingest/keys", headers=None):
        return g.request("POST", path, body, headers=dict(bearer(token), **(headers or {})))[0]

    try:
        t.eq(g.request("GET", "/units", headers=bearer("admin-one"))[0], 200, "the first admin token works")
        t.eq(ingest("ingest-one"), 202, "the first ingest token works")

        # Rotate both tokens and raise the body limit: all of it takes effect at SIGHUP.
        t.eq(ingest("ingest-one", b'{"a":"%s"}' % (b"x" * 6000)), 413, "a 6k body is over max_body 4k")
        tmp.file("admin.token", "admin-two\n")
        tmp.file("ingest.token", "ingest-two\n")
        write_conf(max_body="16k")
        u = reload_and_wait("admin-two", 1)
        t.eq((u["generation"], u["last_reload_error"]), (2, None), "reloaded: generation 2")
        t.eq(g.request("GET", "/units", headers=bearer("admin-one"))[0], 401, "the old admin token is refused")
        t.eq(g.request("GET", "/units", headers=bearer("admin-two"))[0], 200, "the new admin token works")
        t.eq(ingest("ingest-one"), 401, "the old ingest token is refused")
        t.eq(ingest("ingest-two"), 202, "the new ingest token works")
        t.eq(ingest("ingest-two", b'{"a":"%s"}' % (b"x" * 6000)), 202, "max_body 16k from the reload")

        # trusted_proxies from a reload: X-Forwarded-For from loopback is believed afterwards.
        xff = {"X-Forwarded-For": "203.0.113.9"}
        t.eq(ingest("wrong", headers=xff), 401, "a wrong token")
        t.check("from 127.0.0.1 (wrong token)" in g.log(), "not believed before: the peer is logged")
        write_conf(max_body="16k", proxies="trusted_proxies 127.0.0.1;")
        t.eq(reload_and_wait("admin-two", 2)["generation"], 3, "generation 3")
        t.eq(ingest("wrong", headers=xff), 401, "a wrong token again")
        t.check("from 203.0.113.9 via 127.0.0.1 (wrong token)" in g.log(), "believed after the reload")

        # A restart-only key: refused with its file:line, the running generation stays.
        write_conf(max_body="16k", stream="OTHER")
        u = reload_and_wait("admin-two", 3)
        err = u["last_reload_error"] or ""
        t.check("host.conf:5: nats.stream changed; it cannot change on reload, only at a restart" in err,
                "the refusal names the key and its line: %r" % err)
        t.check("reload refused, keeping the running configuration: " in g.log() and "nats.stream changed" in g.log(),
                "and the log says so")
        t.eq(u["generation"], 3, "still generation 3")
        t.eq(ingest("ingest-two"), 202, "still serving with the running tokens")

        # A token file that went missing refuses the reload; the running tokens stay.
        write_conf(max_body="16k")
        tmp.file("admin.token", "")
        u = reload_and_wait("admin-two", 4)
        t.check("admin token" in (u["last_reload_error"] or "") and "empty" in (u["last_reload_error"] or ""),
                "an empty admin token file refuses the reload: %r" % u["last_reload_error"])
        t.eq(u["generation"], 3, "still generation 3 after a bad token file")

        # log_format json from a reload.
        tmp.file("admin.token", "admin-two\n")
        tmp.file("host.conf", open(g.conf).read().replace("log_level debug;", "log_level debug; log_format json;"))
        before = len(g.log().splitlines())
        reload_and_wait("admin-two", 5)
        t.eq(ingest("ingest-two"), 202, "ingest after the json reload")
        later = [ln for ln in g.log().splitlines()[before:] if "http: 202" in ln or "reloaded" in ln]
        t.check(later and all(json.loads(ln)["level"] in ("info", "debug") for ln in later[-2:]),
                "log lines are JSON objects now: %r" % later[-2:])
        t.eq(g.stop(), 0, "clean stop")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        if t.failed:
            print(g.log()[-4000:])

    # The subject prefix comes from `subjects`: ingest and the detect defaults use it.
    tmp.file("d.vpl", RULES)
    conf = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; stream APP; subjects app.>; dlq_stream APP_DLQ; dlq_subjects appdlq.>; }
detect d { rules d.vpl; }
""" % nats.url
    g = Gust(tmp, conf)
    try:
        status, body, _ = g.request("POST", "/ingest/Ping", b'{"id": 7}')
        t.eq((status, json.loads(body)["subject"]), (202, "app.Ping"), "ingest publishes under app.")
        alerts = wait_for(lambda: [m for m in nats.read_stream("APP") if m[1] == "app.detect.d.Seen"], 10,
                          "the detect unit's alert under app.")
        t.eq(json.loads(alerts[0][2])["id"], 7, "the alert, from .from(Bus) without a topic reading app.Ping")
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
