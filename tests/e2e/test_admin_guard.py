"""Admin routes closed by default (issue 24, item 1), against a real nats-server:
- no admin token: the routes that change state or run code (POST /reload, /dlq/purge,
  /dlq/replay, /replay) answer 403 with a JSON error that says how to set one; the
  read-only ones (/units, /events, /dlq, /metrics, /topology) stay open on a
  loopback listener; SIGHUP still reloads;
- never from another origin: a page elsewhere that POSTs /dlq/purge?all=1 is refused,
  with or without the token, and the dead letters stay;
- never for a name this server does not answer to (DNS rebinding): the Host must be the
  listen address, localhost / 127.0.0.1 / [::1] on loopback, or one of server_names;
  X-Forwarded-Host and -Proto count only from trusted_proxies;
- a listener that is not loopback needs the token: gust -t and the start refuse
  without one, a reload that drops it is refused; 127.0.0.2 is loopback;
- /healthz and ingest stay open to every host and origin;
- POST /replay's script_path reads only under the script directories, and no error
  quotes what a file holds."""
import json
import os
import signal
import subprocess

from gustlib import GUST, Checks, Gust, NatsServer, TempDir, free_port, wait_for

TOKEN = "guard-6c1d93e0aa"
SECRET = "TOPSECRET_b7e2f1"

PICKY = """
return {
  source = "ev.picky",
  on_event = function(ev)
    if ev.bad then error("refusing event " .. ev.n) end
    emit("ev.picky.out", { n = ev.n })
  end,
}
"""

# No admin token; a flow that dead-letters bad events at once.
CONF_OPEN = """
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_deliver 1; }
flow picky { script %(tmp)s/scripts/picky.lua; }
"""

# A token, a public name; no trusted proxy (loopback's X-Forwarded-* are not believed).
CONF_TOKEN = """
http { listen 127.0.0.1:@PORT@; admin_token_file %(tmp)s/admin.token; server_names gust.example.com; }
nats { url %(nats)s; max_deliver 1; }
flow picky { script %(tmp)s/scripts/picky.lua; }
"""

# No token, loopback as a trusted proxy that publishes gust as public.example.
CONF_PROXY = """
http { listen 127.0.0.1:@PORT@; trusted_proxies 127.0.0.1; server_names public.example; }
nats { url %(nats)s; }
"""

WRITES = [("POST", "/reload", None), ("POST", "/dlq/purge?all=1", None), ("POST", "/dlq/replay?all=1", None),
          ("POST", "/replay", b'{"unit": "picky", "script": "return {on_event = function(ev) end}"}')]
READS = ["/units", "/events", "/dlq", "/metrics", "/topology"]


def auth():
    return {"Authorization": "Bearer " + TOKEN}


def dlq_total(g, headers=None):
    st, body, _ = g.request("GET", "/dlq", headers=headers)
    assert st == 200, (st, body)
    return json.loads(body)["total"]


def error_of(body):
    try:
        return json.loads(body).get("error", "")
    except ValueError:
        return "(not JSON) %r" % body[:200]


def dead_letters(g, n, headers=None):
    """n more dead letters; the total then."""
    want = dlq_total(g, headers) + n
    for i in range(n):
        g.request("POST", "/ingest/picky", json.dumps({"n": i, "bad": True}).encode())
    wait_for(lambda: dlq_total(g, headers) >= want, 20, "%d dead letters" % want)
    return want


def check_no_token(t, g):
    port = g.port
    for path in READS:
        st, _, _ = g.request("GET", path)
        t.eq(st, 200, "no token, loopback: GET %s is open" % path)
    total = dead_letters(g, 2)
    for method, path, body in WRITES:
        for headers in ({}, {"Authorization": "Bearer anything"}):
            st, data, h = g.request(method, path, body, headers=headers)
            err = error_of(data)
            t.check(st == 403 and "admin_token_file" in err and "admin_token_env" in err and
                    h.get("content-type") == "application/json",
                    "no token: %s %s %s is 403 saying how to set one: %s %s" % (method, path, headers, st, err))
    t.eq(dlq_total(g), total, "no token: nothing purged or replayed")

    # A page of another origin: refused before anything else.
    st, data, _ = g.request("POST", "/dlq/purge?all=1", headers={"Origin": "http://evil.example"})
    t.check(st == 403 and "cross-origin" in error_of(data), "no token: cross-origin purge refused: %s" % data)
    t.eq(dlq_total(g), total, "no token: the dead letters are still there")
    for origin in ("http://evil.example", "null", "http://127.0.0.1:%d" % (port + 1), "https://127.0.0.1:%d" % port):
        st, _, _ = g.request("GET", "/units", headers={"Origin": origin})
        t.eq(st, 403, "no token: GET /units from Origin %s refused" % origin)
    st, _, _ = g.request("GET", "/units", headers={"Origin": "http://127.0.0.1:%d" % port})
    t.eq(st, 200, "no token: GET /units from its own origin")

    # Host: the names of a loopback listener, whatever the port; never another name.
    for host in ("127.0.0.1:%d" % port, "localhost:%d" % port, "LOCALHOST", "[::1]:%d" % port, "127.0.0.1:1"):
        st, _, _ = g.request("GET", "/units", headers={"Host": host})
        t.eq(st, 200, "Host %s accepted on a loopback listener" % host)
    for host in ("evil.example:%d" % port, "evil.example", "127.0.0.1.evil.example", "localhost.evil.example",
                 "10.1.2.3:%d" % port, "gust.example.com"):
        st, data, _ = g.request("GET", "/units", headers={"Host": host})
        t.check(st == 403 and "not a name of this server" in error_of(data),
                "Host %s refused (DNS rebinding): %s %s" % (host, st, data))
    st, _, _ = g.request("GET", "/dlq", headers={"Host": "evil.example:%d" % port,
                                                 "Origin": "http://evil.example:%d" % port})
    t.eq(st, 403, "a rebound page (Host and Origin both evil) is refused")

    # /healthz and ingest: open to every host and origin.
    evil = {"Host": "evil.example", "Origin": "http://evil.example"}
    t.eq(g.request("GET", "/healthz", headers=evil)[0], 200, "/healthz open to any host and origin")
    t.eq(g.request("POST", "/ingest/picky", b'{"n": 50}', headers=evil)[0], 202, "ingest from another origin")

    # SIGHUP still reloads without a token.
    gen = json.loads(g.request("GET", "/units")[1])["generation"]
    g.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: json.loads(g.request("GET", "/units")[1])["generation"] == gen + 1, 20, "SIGHUP reload")
    t.check("403 for POST /dlq/purge?all=1" in g.log(), "refusals are logged")


def check_token(t, g):
    port = g.port
    before = dead_letters(g, 2, auth())
    # The row of the issue: a page on another origin sends POST /dlq/purge?all=1.
    for headers in ({"Origin": "http://evil.example"}, dict(auth(), Origin="http://evil.example"),
                    dict(auth(), Origin="http://localhost:%d" % (port + 1))):
        st, data, _ = g.request("POST", "/dlq/purge?all=1", headers=headers)
        t.check(st == 403 and "cross-origin" in error_of(data), "token: cross-origin purge refused %s: %s %s" %
                (headers.get("Origin"), st, data))
    t.eq(dlq_total(g, auth()), before, "token: the dead letters are still there")
    for path in READS:
        t.eq(g.request("GET", path)[0], 401, "token: GET %s needs it" % path)
    st, _, _ = g.request("POST", "/reload", headers=dict(auth(), Origin="http://127.0.0.1:%d" % port))
    t.eq(st, 202, "token: POST /reload from its own origin")
    # server_names: the public name, with any port or none; the Origin with its port.
    for host in ("gust.example.com", "GUST.example.com:8443", "gust.example.com:%d" % port):
        t.eq(g.request("GET", "/units", headers=dict(auth(), Host=host))[0], 200, "server_names: Host %s" % host)
    st, _, _ = g.request("GET", "/units", headers=dict(auth(), Host="gust.example.com",
                                                       Origin="http://gust.example.com"))
    t.eq(st, 200, "Origin http://gust.example.com for Host gust.example.com (port 80 both)")
    st, _, _ = g.request("GET", "/units", headers=dict(auth(), Host="gust.example.com",
                                                       Origin="https://gust.example.com"))
    t.eq(st, 403, "Origin https://gust.example.com is another port than Host gust.example.com on plain HTTP")
    t.eq(g.request("GET", "/units", headers=dict(auth(), Host="other.example.com"))[0], 403,
         "token: a name not in server_names refused")
    # Not a trusted proxy: X-Forwarded-Host is ignored, the Host is what counts.
    st, _, _ = g.request("GET", "/units", headers=dict(auth(), **{"X-Forwarded-Host": "evil.example"}))
    t.eq(st, 200, "untrusted X-Forwarded-Host ignored")
    st, _, _ = g.request("GET", "/units", headers=dict(auth(), **{"X-Forwarded-Host": "gust.example.com",
                                                                  "Origin": "http://gust.example.com"}))
    t.eq(st, 403, "untrusted X-Forwarded-Host does not make another origin the same")
    t.eq(dlq_total(g, auth()), before, "token: still every dead letter")
    st, data, _ = g.request("POST", "/dlq/purge?all=1", headers=auth())
    t.eq((st, json.loads(data).get("purged")), (200, before), "token: same-origin purge works")


def check_script_path(t, g, tmp):
    def replay(path):
        body = json.dumps({"unit": "picky", "script_path": path, "last": 5}).encode()
        st, data, _ = g.request("POST", "/replay", body, headers=dict(auth(), **{"Content-Type": "application/json"}),
                                timeout=60)
        return st, data.decode(errors="replace")

    outside = tmp.file("secret.txt", SECRET + " = 1\n")
    os.symlink(outside, os.path.join(tmp.path, "scripts", "link.lua"))
    tmp.file("scripts/notes.txt", "password " + SECRET + "\n")
    for path in (outside, "secret.txt", "scripts/../secret.txt", os.path.join(tmp.path, "scripts", "link.lua"),
                 "/etc/passwd", os.path.join(tmp.path, "scripts", "nosuch.lua"), os.path.join(tmp.path, "scripts")):
        st, data = replay(path)
        t.check(st == 403 and "script directories" in data or (st == 403 and "regular file" in data),
                "script_path %s refused: %s %s" % (path, st, data[:300]))
        t.check(SECRET not in data and "root:" not in data, "script_path %s: no contents quoted" % path)
    st, data = replay(os.path.join(tmp.path, "scripts", "notes.txt"))
    t.check(st == 400 and "candidate script" in data and "notes.txt:1" in data and SECRET not in data,
            "a file under the script directory that is not Lua: where, not what: %s %s" % (st, data[:300]))
    st, data = replay("scripts/picky.lua")
    t.eq(st, 200, "script_path relative to host.conf's directory, under the scripts: %s" % data[:300])
    st, data = replay(os.path.join(tmp.path, "scripts", "picky.lua"))
    t.eq(st, 200, "script_path under the scripts: %s" % data[:300])


def check_proxy(t, tmp, nats):
    g = Gust(tmp, CONF_PROXY % {"nats": nats.url})
    try:
        fwd = {"Host": "127.0.0.1:%d" % g.port, "X-Forwarded-Host": "public.example:8443",
               "X-Forwarded-Proto": "https"}
        t.eq(g.request("GET", "/units", headers=fwd)[0], 200, "X-Forwarded-Host of server_names from a trusted proxy")
        st, _, _ = g.request("GET", "/units", headers=dict(fwd, Origin="https://public.example:8443"))
        t.eq(st, 200, "Origin compared with X-Forwarded-Host from a trusted proxy")
        st, _, _ = g.request("GET", "/units", headers=dict(fwd, Origin="https://127.0.0.1:%d" % g.port))
        t.eq(st, 403, "Origin compared with X-Forwarded-Host, not the proxy's Host")
        st, _, _ = g.request("GET", "/units", headers={"Host": "public.example", "X-Forwarded-Proto": "https",
                                                       "Origin": "https://public.example"})
        t.eq(st, 200, "a Host without a port is the default port of X-Forwarded-Proto")
        st, data, _ = g.request("GET", "/units", headers=dict(fwd, **{"X-Forwarded-Host": "evil.example"}))
        t.check(st == 403 and "X-Forwarded-Host" in error_of(data), "X-Forwarded-Host evil refused: %s" % data)
        # A proxy that passes the client's Host and X-Forwarded-Host on: both are checked.
        st, data, _ = g.request("GET", "/units", headers=dict(fwd, Host="evil.example"))
        t.check(st == 403 and "Host 'evil.example'" in error_of(data),
                "a rebound Host with a good X-Forwarded-Host refused: %s" % data)
        st, _, _ = g.request("POST", "/dlq/purge?all=1", headers=fwd)
        t.eq(st, 403, "no token behind a proxy: purge still closed")
    finally:
        g.stop()


def gust_t(tmp, name, conf):
    path = tmp.file(name, conf)
    p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr


def check_listen(t, tmp, nats):
    port = free_port()
    exposed = "http { listen 0.0.0.0:%d; }\nnats { url %s; }\n" % (port, nats.url)
    rc, err = gust_t(tmp, "exposed.conf", exposed)
    t.check(rc == 1 and "exposed.conf:1" in err and "not a loopback address" in err and "admin_token_file" in err,
            "gust -t: 0.0.0.0 without a token: %s %s" % (rc, err))
    rc, err = gust_t(tmp, "exposed6.conf", "http { listen [::]:%d; }\n" % port)
    t.check(rc == 1 and "not a loopback address" in err, "gust -t: [::] without a token: %s" % err)
    rc, err = gust_t(tmp, "badname.conf", "http { server_names gust.example.com:443; }\n")
    t.check(rc == 1 and "badname.conf:1" in err and "server_names" in err, "gust -t: a server name with a port: %s" % err)
    rc, err = gust_t(tmp, "lo2.conf", "http { listen 127.0.0.2:%d; }\n" % port)
    t.eq(rc, 0, "gust -t: 127.0.0.2 is loopback: %s" % err)

    bad = Gust(tmp, "http { listen 0.0.0.0:@PORT@; }\nnats { url %s; }\n" % nats.url, wait_healthy=False)
    rc = bad.proc.wait(20)
    t.check(rc != 0 and "not a loopback address" in bad.log(), "start on 0.0.0.0 without a token refused: %s" %
            bad.log()[-400:])

    # 127.0.0.2 is loopback: read-only open, writes closed.
    lo2 = Gust(tmp, "http { listen 127.0.0.2:@PORT@; }\nnats { url %s; }\n" % nats.url, wait_healthy=False)
    try:
        import http.client

        def req(method, path, headers=None):
            c = http.client.HTTPConnection("127.0.0.2", lo2.port, timeout=10)
            try:
                c.request(method, path, headers=headers or {})
                r = c.getresponse()
                return r.status, r.read()
            finally:
                c.close()
        wait_for(lambda: lo2.proc.poll() is not None or _try(lambda: req("GET", "/healthz")[0] == 200), 20,
                 "gust on 127.0.0.2")
        t.eq(req("GET", "/units")[0], 200, "127.0.0.2: GET /units open (Host is the listen address)")
        t.eq(req("POST", "/reload")[0], 403, "127.0.0.2: POST /reload closed")
    finally:
        lo2.stop()

    # 0.0.0.0 with a token: starts; the connection's local address is a name of it; a
    # reload that drops the token is refused and the token stays in force.
    conf = "http { listen 0.0.0.0:@PORT@; %s }\nnats { url " + nats.url + "; }\n"
    g = Gust(tmp, conf % ("admin_token_file %s/admin.token;" % tmp.path))
    try:
        t.eq(g.request("GET", "/units", headers=auth())[0], 200, "0.0.0.0 with a token: Host 127.0.0.1 accepted")
        t.eq(g.request("GET", "/units")[0], 401, "0.0.0.0: reads need the token")
        gen = json.loads(g.request("GET", "/units", headers=auth())[1])["reload_count"]
        with open(g.conf, "w") as f:
            f.write((conf % "").replace("@PORT@", str(g.port)))
        g.proc.send_signal(signal.SIGHUP)

        def refused():
            u = json.loads(g.request("GET", "/units", headers=auth())[1])
            return u["reload_count"] > gen and u
        u = wait_for(refused, 20, "the reload done")
        t.check("not a loopback address" in (u.get("last_reload_error") or ""),
                "a reload that drops the token on 0.0.0.0 is refused: %s" % u.get("last_reload_error"))
        t.eq(g.request("GET", "/units")[0], 401, "the token is still in force")
    finally:
        g.stop()


def _try(f):
    try:
        return f()
    except OSError:
        return False


def main():
    t = Checks()
    tmp = TempDir()
    os.makedirs(os.path.join(tmp.path, "scripts"))
    tmp.file("scripts/picky.lua", PICKY)
    with open(os.path.join(tmp.path, "admin.token"), "w") as f:
        f.write(TOKEN + "\n")
    nats = NatsServer(tmp)
    g = None
    try:
        g = Gust(tmp, CONF_OPEN % {"nats": nats.url, "tmp": tmp.path})
        check_no_token(t, g)
        g.stop()
        g = Gust(tmp, CONF_TOKEN % {"nats": nats.url, "tmp": tmp.path})
        check_token(t, g)
        check_script_path(t, g, tmp)
        g.stop()
        check_proxy(t, tmp, nats)
        check_listen(t, tmp, nats)
    except Exception:
        if g is not None:
            print(g.log()[-4000:])
        raise
    finally:
        if g is not None:
            g.stop()
        nats.stop()
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
