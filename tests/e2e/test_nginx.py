"""gust mounted under /gust/ behind a real nginx (Debian's), both ways: with the
README's location block (tests/e2e/nginx_location.conf, included verbatim: nginx strips
the prefix) and with nginx passing the prefix on (gust strips its base_path). Ingest,
/healthz, the admin routes with their token, the status page, the redirect to "/gust/",
and X-Forwarded-For / -Proto believed from the trusted proxy."""
import json
import os

from gustlib import SOURCE_DIR, Checks, Gust, NatsServer, Nginx, TempDir, wait_for

TOKEN = "ngx-3d1f0a77"

CONF = """
log_level debug;
http { listen 127.0.0.1:@PORT@; base_path /gust; trusted_proxies 127.0.0.1 ::1;
       admin_token_file %(tmp)s/admin.token; server_names gust.example.com; }
nats { url %(nats)s; max_deliver 1; }
flow picky { script %(tmp)s/picky.lua; }
"""

PICKY = """
return {
  source = "ev.picky",
  on_event = function(ev)
    if ev.bad then error("refusing event " .. ev.n) end
    emit("ev.picky.out", { n = ev.n })
  end,
}
"""

LOCATION = os.path.join(SOURCE_DIR, "tests", "e2e", "nginx_location.conf")

# The same mount without stripping: nginx passes /gust/... on and gust strips it.
NO_STRIP = """
        location /gust/ {
            proxy_pass http://gust;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
        }
        location = /gust { proxy_pass http://gust; proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; }
"""


def auth():
    return {"Authorization": "Bearer " + TOKEN}


def run_through(t, g, ngx, port, mode):
    def req(method, path, body=None, headers=None):
        return ngx.request(method, path, body=body, headers=headers, port=port)

    st, body, _ = req("POST", "/gust/ingest/picky", json.dumps({"n": 1, "via": mode}).encode())
    t.eq(st, 202, "%s: ingest" % mode)
    t.eq(json.loads(body)["subject"], "ev.picky", "%s: ingest subject" % mode)
    req("POST", "/gust/ingest/picky", json.dumps({"n": 2, "bad": True}).encode())
    st, body, _ = req("GET", "/gust/healthz")
    t.eq((st, json.loads(body)), (200, {"status": "ok"}), "%s: healthz" % mode)

    st, body, h = req("GET", "/gust/units")
    t.eq((st, h.get("www-authenticate")), (401, 'Bearer realm="gust"'), "%s: units without the token" % mode)
    st, body, _ = req("GET", "/gust/units", headers=auth())
    t.eq((st, [u["name"] for u in json.loads(body)["units"]]), (200, ["picky"]), "%s: units" % mode)

    def events():
        st, body, _ = req("GET", "/gust/events?unit=picky", headers=auth())
        evs = json.loads(body)["units"][0]["events"] if st == 200 else []
        # The one handled: an attempt that came while a reload stopped the unit was
        # handed back ("not run: the unit is stopping") and shows as a wait.
        return [e for e in evs if mode in e["payload"] and e["outcome"] == "ok"]
    evs = wait_for(events, 10, "%s: the event in /events" % mode)
    t.eq(evs[0]["emits"][0]["subject"], "ev.picky.out", "%s: events" % mode)

    def dead():
        st, body, _ = req("GET", "/gust/dlq", headers=auth())
        return st == 200 and json.loads(body)["total"] > 0 and json.loads(body)
    d = wait_for(dead, 10, "%s: a dead letter" % mode)
    t.eq(d["dead_letters"][0]["envelope"]["original_subject"], "ev.picky", "%s: dlq" % mode)
    # Through nginx too: a page of another origin, or a name gust does not answer to, is
    # refused with the token; the page's own origin and server_names pass.
    st, body, _ = req("POST", "/gust/dlq/purge?all=1", headers=dict(auth(), Origin="http://evil.example"))
    t.check(st == 403 and "cross-origin" in json.loads(body)["error"], "%s: cross-origin purge: %s" % (mode, body))
    t.eq(dead()["total"], d["total"], "%s: the dead letters are still there" % mode)
    st, _, _ = req("GET", "/gust/units", headers=dict(auth(), Origin="http://127.0.0.1:%d" % port))
    t.eq(st, 200, "%s: the page's own origin" % mode)
    st, _, _ = req("GET", "/gust/units", headers=dict(auth(), Origin="https://127.0.0.1:%d" % port))
    t.eq(st, 403, "%s: the same host and port over https is another origin" % mode)
    st, body, _ = req("GET", "/gust/units", headers=dict(auth(), Host="evil.example:%d" % port))
    t.check(st == 403 and "not a name of this server" in json.loads(body)["error"],
            "%s: a rebound name refused: %s" % (mode, body))
    st, _, _ = req("GET", "/gust/units", headers=dict(auth(), Host="gust.example.com",
                                                      Origin="http://gust.example.com"))
    t.eq(st, 200, "%s: a name of server_names, port 80 on both sides" % mode)
    st, _, _ = req("GET", "/gust/units", headers=dict(auth(), Host="evil.example", **{
        "X-Forwarded-Host": "gust.example.com"}))
    t.eq(st, 403, "%s: a rebound name with a forged X-Forwarded-Host" % mode)
    st, _, _ = req("POST", "/gust/ingest/picky", json.dumps({"n": 3, "via": mode}).encode(),
                   headers={"Host": "evil.example", "Origin": "http://evil.example"})
    t.eq(st, 202, "%s: ingest from any host and origin" % mode)
    st, body, _ = req("POST", "/gust/dlq/purge?all=1", headers=auth())
    t.eq((st, json.loads(body)["purged"] >= 1), (200, True), "%s: dlq purge" % mode)
    st, body, _ = req("POST", "/gust/dlq/replay?all=1", headers=auth())
    t.eq(st, 200, "%s: dlq replay" % mode)
    st, body, _ = req("POST", "/gust/reload", headers=auth())
    t.eq((st, json.loads(body)), (202, {"reload": "requested"}), "%s: reload" % mode)
    st, body, _ = req("GET", "/gust/metrics", headers=auth())
    t.check(st == 200 and b"gust_http_requests_total" in body, "%s: metrics" % mode)

    st, body, h = req("GET", "/gust/", headers=auth())
    t.eq((st, h.get("content-type")), (200, "text/html; charset=utf-8"), "%s: status page" % mode)
    t.check(b"get('units')" in body and b"get('/units')" not in body, "%s: page fetches are relative" % mode)
    t.eq(req("GET", "/gust/")[0], 200, "%s: the console page holds no data: served without the token" % mode)
    t.eq(req("GET", "/gust/topology")[0], 401, "%s: what it shows needs the token" % mode)
    st, body, _ = req("GET", "/gust/topology", headers=auth())
    t.check(st == 200 and b'"nodes"' in body, "%s: topology under the prefix" % mode)
    st, _, h = req("GET", "/gust", headers=auth())
    t.check(st in (301, 302, 308) and h.get("location", "").endswith("/gust/"),
            "%s: /gust redirects to /gust/: %d %r" % (mode, st, h.get("location")))

    # The access log believes nginx (a trusted proxy) about the client and the scheme.
    marker = "xff-%s" % mode
    req("GET", "/gust/healthz?" + marker, headers={"X-Forwarded-For": "203.0.113.7"})
    line = wait_for(lambda: [l for l in g.log().splitlines() if marker in l], 5, "access log line")[0]
    t.check("http: 203.0.113.7 GET " in line and "via 127.0.0.1 http" in line,
            "%s: client from X-Forwarded-For: %s" % (mode, line))
    req("GET", "/gust/units?denied-" + mode, headers={"X-Forwarded-For": "198.51.100.23"})
    line = wait_for(lambda: [l for l in g.log().splitlines() if "denied-" + mode in l and "401 for" in l],
                    5, "401 log line")[0]
    t.check("from 198.51.100.23 via 127.0.0.1" in line, "%s: 401 logged with the client: %s" % (mode, line))


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("picky.lua", PICKY)
    tmp.file("admin.token", TOKEN + "\n")
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % {"nats": nats.url, "tmp": tmp.path})
    ngx = None
    try:
        ngx = Nginx(tmp, "        include %s;" % LOCATION, upstreams={"gust": g.port}, extra_servers=[NO_STRIP])
        run_through(t, g, ngx, ngx.port, "strip")
        run_through(t, g, ngx, ngx.extra_ports[0], "nostrip")
        t.eq(g.request("GET", "/healthz")[0], 200, "gust still healthy")
    finally:
        if ngx is not None:
            if t.failed:
                print(ngx.error_log()[-2000:])
            ngx.stop()
        g.stop()
        nats.stop()
        if t.failed:
            print(g.log()[-3000:])
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
