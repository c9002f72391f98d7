"""The admin surface and its security against a real nats-server: bearer tokens on
every admin route (constant-time compared; ingest with its own token or open), the
limits (body, header size, slow clients, the connection cap), GET /events, GET /dlq
with pagination, POST /dlq/replay (by seq, unit, all; payload and payload_base64),
POST /dlq/purge, POST /reload, and X-Forwarded-For only from trusted proxies."""
import json
import os
import socket
import time

from gustlib import Checks, Gust, NatsServer, TempDir, nats_publish, wait_for

TOKEN = "adm-7f3c2e9a1b"
INGEST_TOKEN = "ing-55d0c1"

PICKY = """
-- throws on events marked bad; passes the others on
return {
  source = "ev.picky",
  on_event = function(ev)
    if ev.bad then error("refusing event " .. ev.n) end
    emit("ev.picky.out", { n = ev.n })
  end,
}
"""

# A: admin token from a file, ingest open, tight limits.
CONF_A = """
http { listen 127.0.0.1:@PORT@; max_body 4k; admin_token_file %(tmp)s/admin.token;
       client_timeout 2s; max_connections 8; max_header_size 8k; }
nats { url %(nats)s; max_deliver 2; retry_delay 50ms; }
flow picky { script %(tmp)s/picky.lua; }
"""

# B: tokens from the environment, an ingest token, public metrics, a trusted proxy
# that is not loopback (so loopback's X-Forwarded-For is ignored), access log on.
CONF_B = """
log_level debug;
http { listen 127.0.0.1:@PORT@; admin_token_env GUST_TEST_ADMIN; ingest_token_env GUST_TEST_INGEST;
       metrics_public on; trusted_proxies 10.0.0.0/8; }
nats { url %(nats)s; }
"""

# C: no token at all: the read-only admin routes open (loopback), X-Forwarded-For from loopback believed.
CONF_C = """
log_level debug;
http { listen 127.0.0.1:@PORT@; trusted_proxies 127.0.0.1 ::1; }
nats { url %(nats)s; }
"""

ADMIN_ROUTES = [("GET", "/units"), ("GET", "/events"), ("GET", "/dlq"), ("GET", "/topology"), ("GET", "/metrics"),
                ("POST", "/reload"), ("POST", "/dlq/replay?all=1"), ("POST", "/dlq/purge?unit=nobody")]


def auth(token):
    return {"Authorization": "Bearer " + token}


def raw_conn(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def closed_within(s, seconds):
    """Seconds until the server closed s (reading whatever it sent), or None."""
    s.settimeout(0.2)
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            if s.recv(65536) == b"":
                return time.monotonic() - t0
        except socket.timeout:
            continue
        except ConnectionResetError:
            return time.monotonic() - t0
    return None


def check_auth(t, g):
    for method, path in ADMIN_ROUTES:
        st, body, h = g.request(method, path)
        t.eq(st, 401, "%s %s without a token" % (method, path))
        t.check("error" in json.loads(body), "%s %s: 401 has a JSON error" % (method, path))
        t.eq(h.get("www-authenticate"), 'Bearer realm="gust"', "%s %s: WWW-Authenticate" % (method, path))
        st, _, _ = g.request(method, path, headers=auth(TOKEN + "x"))
        t.eq(st, 401, "%s %s with a wrong token" % (method, path))
        st, _, _ = g.request(method, path, headers=auth(TOKEN[:-1]))
        t.eq(st, 401, "%s %s with a token's prefix" % (method, path))
        st, _, _ = g.request(method, path, headers={"Authorization": "Basic " + TOKEN})
        t.eq(st, 401, "%s %s with another scheme" % (method, path))
        st, _, _ = g.request(method, path, headers=auth(TOKEN))
        t.check(st in (200, 202), "%s %s with the token: got %d" % (method, path, st))
    # The console page holds no data: it is served without the token and asks for it.
    st, body, _ = g.request("GET", "/", headers={"Authorization": "Bearer none"})
    t.check(st == 200 and b'id="login"' in body, "the console page is open and has its login form")
    st, _, _ = g.request("GET", "/healthz")
    t.eq(st, 200, "healthz stays open")
    st, _, _ = g.request("POST", "/ingest/picky", b'{"n": 0}')
    t.eq(st, 202, "ingest is open without an ingest token")
    st, body, _ = g.request("POST", "/reload", headers=auth(TOKEN))
    t.eq((st, json.loads(body)), (202, {"reload": "requested"}), "POST /reload")
    st, _, h = g.request("GET", "/reload", headers=auth(TOKEN))
    t.eq((st, h.get("allow")), (405, "POST"), "GET /reload")


def check_limits(t, g):
    # Body size (max_body 4k): JSON 413.
    st, body, _ = g.request("POST", "/ingest/picky", b'{"a": "' + b"x" * 5000 + b'"}')
    t.eq(st, 413, "body over max_body")
    # Header size: over max_header_size is 431; far over h2o's own limit, refused too.
    st, body, _ = g.request("GET", "/healthz", headers={"X-Big": "y" * 9000})
    t.eq(st, 431, "headers over max_header_size")
    t.check("error" in json.loads(body), "431 has a JSON error")
    s = raw_conn(g.port)
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Huge: " + b"z" * 500000 + b"\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    s.settimeout(5)
    try:
        answer = s.recv(200)
    except (ConnectionResetError, socket.timeout):
        answer = b""
    s.close()
    t.check(answer == b"" or answer.split(b" ")[1] in (b"400", b"413", b"431"), "huge headers refused: %r" % answer[:40])
    t.eq(g.request("GET", "/healthz")[0], 200, "still serving after huge headers")

    # Slow clients (client_timeout 2s): unfinished headers, then an unfinished body.
    s = raw_conn(g.port)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    took = closed_within(s, 6)
    s.close()
    t.check(took is not None and 1.0 < took < 4.5, "unfinished headers closed after client_timeout: %r" % took)
    s = raw_conn(g.port)
    s.sendall(b"POST /ingest/picky HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"n\":")
    took = closed_within(s, 6)
    s.close()
    t.check(took is not None and 1.0 < took < 4.5, "unfinished body closed after client_timeout: %r" % took)

    # The connection cap (max_connections 8): the 9th is closed at accept, and once one
    # closes a new one is served again.
    wait_for(lambda: b"gust_http_connections 1\n" in g.request("GET", "/metrics", headers=auth(TOKEN))[1],
             5, "connections back to 1 (the metrics request itself)")
    held = [raw_conn(g.port) for _ in range(8)]
    time.sleep(0.3)
    extra = raw_conn(g.port)
    took = closed_within(extra, 1.5)
    extra.close()
    t.check(took is not None and took < 1.0, "9th connection closed at once: %r" % took)
    held.pop().close()
    time.sleep(0.3)
    st = g.request("GET", "/healthz")[0]
    t.eq(st, 200, "served again once a connection closed")
    for s in held:
        s.close()
    time.sleep(0.3)
    m = g.request("GET", "/metrics", headers=auth(TOKEN))[1].decode()
    t.check("gust_http_connections_refused_total 1\n" in m, "refused connection counted")


def events_of(g, unit=None):
    st, body, _ = g.request("GET", "/events" + ("?unit=" + unit if unit else ""), headers=auth(TOKEN))
    return st, json.loads(body)


def check_events(t, g):
    for i in range(1, 4):
        g.request("POST", "/ingest/picky", json.dumps({"n": i}).encode())
    g.request("POST", "/ingest/picky", json.dumps({"n": 99, "bad": True}).encode())

    def dead_seen():
        st, d = events_of(g, "picky")
        evs = d["units"][0]["events"] if st == 200 else []
        return any(e["outcome"] == "dead" for e in evs) and evs
    evs = wait_for(dead_seen, 15, "the bad event dead in /events")
    ok = [e for e in evs if e["outcome"] == "ok" and json.loads(e["payload"]).get("n") == 3]
    t.check(len(ok) == 1, "event n=3 shown ok")
    if ok:
        e = ok[0]
        t.eq(e["subject"], "ev.picky", "event subject")
        t.eq([(m["subject"], json.loads(m["payload"])) for m in e["emits"]], [("ev.picky.out", {"n": 3})],
             "event shows its emit")
        t.eq(e["error"], None, "ok event has no error")
    bad = [e for e in evs if json.loads(e["payload"]).get("n") == 99]
    t.eq([e["outcome"] for e in bad], ["dead", "retry"], "bad event: retry then dead, newest first")
    t.check(all("refusing event 99" in (e["error"] or "") for e in bad), "bad event shows its error")
    t.check(evs[0]["at"] >= evs[-1]["at"], "newest first")
    st, d = events_of(g)
    t.eq((st, [u["name"] for u in d["units"]]), (200, ["picky"]), "GET /events lists every unit")
    st, _ = events_of(g, "nosuchunit")
    t.eq(st, 404, "unknown unit")
    # The ring keeps the last 50; a big payload is truncated.
    for i in range(60):
        g.request("POST", "/ingest/picky", json.dumps({"n": 1000 + i}).encode())
    g.request("POST", "/ingest/picky", json.dumps({"n": 2000, "pad": "p" * 3000}).encode())

    def last_seen():
        evs = events_of(g, "picky")[1]["units"][0]["events"]
        return any(json.loads(e["payload"] if not e["truncated"] else '{"n":2000}').get("n") == 2000
                   for e in evs) and evs
    evs = wait_for(last_seen, 15, "the big event in /events")
    t.eq(len(evs), 50, "ring of 50 events")
    big = [e for e in evs if e["truncated"]]
    t.check(len(big) == 1 and big[0]["payload_bytes"] > 3000 and len(big[0]["payload"]) <= 1024,
            "big payload truncated to 1 KiB")


def dlq(g, query=""):
    st, body, _ = g.request("GET", "/dlq" + query, headers=auth(TOKEN))
    return st, json.loads(body)


def check_dlq(t, g, nats):
    # Three more dead letters: two bad events and one undecodable (not UTF-8) message.
    g.request("POST", "/ingest/picky", json.dumps({"n": 101, "bad": True}).encode())
    g.request("POST", "/ingest/picky", json.dumps({"n": 102, "bad": True}).encode())
    nats_publish(nats.port, [("ev.picky", b"\xff\xfe not json")])
    d = wait_for(lambda: dlq(g)[1]["total"] >= 4 and dlq(g)[1], 15, "four dead letters")
    t.eq(d["count"], 4, "GET /dlq lists them")
    t.eq(d["next_after_seq"], None, "one page")
    letters = d["dead_letters"]
    t.check(all(x["unit"] == "picky" and x["subject"] == "dlq.picky" for x in letters), "unit and subject")
    t.check(all(x["envelope"]["original_subject"] == "ev.picky" for x in letters), "envelopes")
    binary = [x for x in letters if "payload_base64" in x["envelope"]]
    t.eq(len(binary), 1, "the undecodable one has payload_base64")
    # Pagination.
    seqs, after = [], 0
    while True:
        st, page = dlq(g, "?limit=1&after_seq=%d" % after)
        seqs += [x["seq"] for x in page["dead_letters"]]
        if page["next_after_seq"] is None:
            break
        after = page["next_after_seq"]
    t.eq(seqs, [x["seq"] for x in letters], "pages of 1 give the same letters")
    t.eq(dlq(g, "?unit=other")[1]["count"], 0, "filter by unit")
    t.eq(dlq(g, "?limit=x")[0], 400, "bad limit")

    # Replay by seq: republished with the same bytes to the original subject, then deleted.
    before = {s for s, _, _ in nats.read_stream()}
    target = binary[0]
    st, body, _ = g.request("POST", "/dlq/replay", json.dumps({"seq": target["seq"]}).encode(), headers=auth(TOKEN))
    t.eq((st, json.loads(body)["replayed"]), (200, 1), "replay by seq")
    new = [(subj, data) for s, subj, data in nats.read_stream() if s not in before]
    t.check(("ev.picky", b"\xff\xfe not json") in new, "binary payload republished byte for byte: %r" % new)
    t.check(target["seq"] not in [x["seq"] for x in dlq(g)[1]["dead_letters"]], "replayed letter deleted")
    st, body, _ = g.request("POST", "/dlq/replay?seq=999999", headers=auth(TOKEN))
    t.eq(st, 404, "replay of an unknown seq")
    st, _, _ = g.request("POST", "/dlq/replay", headers=auth(TOKEN))
    t.eq(st, 400, "replay without a selector")
    st, _, _ = g.request("POST", "/dlq/replay", b'{"seq": 1, "all": true}', headers=auth(TOKEN))
    t.eq(st, 400, "replay with two selectors")
    st, _, _ = g.request("GET", "/dlq/replay", headers=auth(TOKEN))
    t.eq(st, 405, "GET on replay")

    # Replay by unit: the text payloads come back exactly, the letters go away (the flow
    # refuses them again, so they come back as new letters with higher seqs).
    before = {s for s, _, _ in nats.read_stream()}
    old = {x["seq"] for x in dlq(g)[1]["dead_letters"]}
    st, body, _ = g.request("POST", "/dlq/replay?unit=picky", headers=auth(TOKEN))
    r = json.loads(body)
    t.eq((st, r["replayed"], r["failed"]), (200, len(old), 0), "replay by unit")
    new = [data for s, subj, data in nats.read_stream() if s not in before and subj == "ev.picky"]
    t.eq(sorted(json.loads(d)["n"] for d in new if d.startswith(b"{")), [99, 101, 102], "text payloads republished")
    t.eq([d for d in new if not d.startswith(b"{")], [b"\xff\xfe not json"], "and the binary one")
    cur = wait_for(lambda: len(dlq(g)[1]["dead_letters"]) >= 4 and dlq(g)[1]["dead_letters"], 15, "letters back")
    t.check(not ({x["seq"] for x in cur} & old), "old letters deleted, new ones dead-lettered again")

    # Replay all, then purge by unit and all.
    st, body, _ = g.request("POST", "/dlq/replay", b'{"all": true}', headers=auth(TOKEN))
    t.eq((st, json.loads(body)["replayed"]), (200, 4), "replay all")
    wait_for(lambda: dlq(g)[1]["total"] == 4, 15, "letters back again")
    st, body, _ = g.request("POST", "/dlq/purge?unit=other", headers=auth(TOKEN))
    t.eq((st, json.loads(body)["purged"]), (200, 0), "purge of another unit")
    st, body, _ = g.request("POST", "/dlq/purge", b'{"unit": "picky"}', headers=auth(TOKEN))
    t.eq((st, json.loads(body)["purged"]), (200, 4), "purge by unit")
    g.request("POST", "/ingest/picky", json.dumps({"n": 103, "bad": True}).encode())
    wait_for(lambda: dlq(g)[1]["total"] == 1, 15, "a new letter")
    st, _, _ = g.request("POST", "/dlq/purge", headers=auth(TOKEN))
    t.eq(st, 400, "purge without a selector is refused")
    t.eq(dlq(g)[1]["total"], 1, "nothing purged without a selector")
    st, body, _ = g.request("POST", "/dlq/purge?all=1", headers=auth(TOKEN))
    t.eq((st, json.loads(body)["purged"]), (200, 1), "purge all")
    t.eq(dlq(g)[1]["total"], 0, "empty")
    st, _, _ = g.request("POST", "/dlq/purge?unit=a.b", headers=auth(TOKEN))
    t.eq(st, 400, "purge with a bad unit name")


def check_env_tokens_and_proxies(t, tmp, nats):
    env = {"GUST_TEST_ADMIN": TOKEN, "GUST_TEST_INGEST": INGEST_TOKEN}
    b = Gust(tmp, CONF_B % {"nats": nats.url}, env=env)
    try:
        t.eq(b.request("GET", "/units")[0], 401, "B: admin token from the environment")
        t.eq(b.request("GET", "/units", headers=auth(TOKEN))[0], 200, "B: admin token accepted")
        t.eq(b.request("GET", "/metrics")[0], 200, "B: metrics_public")
        st, _, h = b.request("POST", "/ingest/x", b'{"a": 1}')
        t.eq((st, h.get("www-authenticate")), (401, 'Bearer realm="gust-ingest"'), "B: ingest needs its token")
        t.eq(b.request("POST", "/ingest/x", b'{"a": 1}', headers=auth(TOKEN))[0], 401, "B: admin token is not ingest's")
        t.eq(b.request("POST", "/ingest/x", b'{"a": 1}', headers=auth(INGEST_TOKEN))[0], 202, "B: ingest token")
        t.eq(b.request("GET", "/units", headers=auth(INGEST_TOKEN))[0], 401, "B: ingest token is not admin's")
        # Loopback is not a trusted proxy here: its X-Forwarded-For is ignored.
        b.request("GET", "/healthz?b1", headers={"X-Forwarded-For": "198.51.100.9", "X-Forwarded-Proto": "https"})
        line = wait_for(lambda: [l for l in b.log().splitlines() if "/healthz?b1" in l], 5, "access log line")[0]
        t.check("http: 127.0.0.1 GET /healthz?b1 200" in line and "198.51.100.9" not in line,
                "untrusted X-Forwarded-For ignored: %s" % line)
    finally:
        b.stop()
    # An unset variable is a startup error naming it.
    bad = Gust(tmp, CONF_B % {"nats": nats.url}, wait_healthy=False, env={"GUST_TEST_INGEST": "x"})
    rc = bad.proc.wait(20)
    t.check(rc != 0 and "GUST_TEST_ADMIN" in bad.log(), "unset token variable refused at start")

    c = Gust(tmp, CONF_C % {"nats": nats.url})
    try:
        t.eq(c.request("GET", "/units")[0], 200, "C: no admin token, read-only admin routes open")
        c.request("GET", "/healthz?c1", headers={"X-Forwarded-For": "203.0.113.7, 10.1.1.1", "X-Forwarded-Proto": "https"})
        line = wait_for(lambda: [l for l in c.log().splitlines() if "/healthz?c1" in l], 5, "access log line")[0]
        t.check("http: 10.1.1.1 GET /healthz?c1 200" in line and "via 127.0.0.1 https" in line,
                "trusted proxy's X-Forwarded-For: rightmost untrusted entry: %s" % line)
    finally:
        c.stop()


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("picky.lua", PICKY)
    with open(os.path.join(tmp.path, "admin.token"), "w") as f:
        f.write(TOKEN + "\n")
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF_A % {"nats": nats.url, "tmp": tmp.path})
    try:
        check_auth(t, g)
        check_limits(t, g)
        check_events(t, g)
        check_dlq(t, g, nats)
        t.eq(g.request("GET", "/healthz")[0], 200, "A still healthy")
        t.eq(g.stop(), 0, "A exits cleanly")
        check_env_tokens_and_proxies(t, tmp, nats)
    except Exception:
        print(g.log()[-4000:])
        raise
    finally:
        g.stop()
        nats.stop()
        if t.failed:
            print(g.log()[-3000:])
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
