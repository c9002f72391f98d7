"""Ingest against a broken or hostile NATS server (issue 17, section 3), each case with a
fake peer (natsproxy.py, a proxy in front of a real nats-server that misbehaves towards
gust's ingest connection on demand) or a real server frozen with SIGSTOP. In every case
the process stays up, every request is answered within its timeout with Gust's JSON, a
202 is only ever given for an event stored under the sequence it names, and ingest
recovers once the server behaves."""
import json
import os
import re
import signal
import threading
import time

from gustlib import SANITIZED, Checks, Gust, NatsServer, TempDir, wait_for
from natsproxy import NatsProxy

PING_MS, MAX_PINGS, TIMEOUT_MS = 500, 2, 2000
KEEPALIVE_S = PING_MS * (MAX_PINGS + 1) / 1000.0
# What a PING flood may add to RSS: a write queue of twice 9 MB, and ASan's quarantine.
FLOOD_RSS_KB = (512 if SANITIZED else 64) * 1024

CONF = """
http { listen 127.0.0.1:@PORT@; }
nats {
    url %s;
    publish_timeout %dms;
    ping_interval %dms;
    max_pings_out %d;
    reconnect_wait 100ms;
    reconnect_max_wait 2s;
}
"""


def post(g, body, headers=None):
    """(status, parsed body, seconds) of one POST /ingest/hostile."""
    start = time.monotonic()
    status, resp, hdrs = g.request("POST", "/ingest/hostile", body, headers=headers, timeout=TIMEOUT_MS / 1000 + 5)
    took = time.monotonic() - start
    return status, json.loads(resp), took, hdrs


def post_many(g, n, tag):
    """n POSTs at once, each {"tag","i"}: [(i, status, body, seconds)]."""
    out = [None] * n

    def one(i):
        s, b, took, _ = post(g, json.dumps({"tag": tag, "i": i}).encode())
        out[i] = (i, s, b, took)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return out


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def acks_are_true(t, nats, results, what):
    """Every 202 names the sequence its event was stored under; every other answer is a
    503 in JSON, within the publish timeout."""
    stored = {seq: body for seq, subject, body in nats.read_stream() if subject == "ev.hostile"}
    for i, status, body, took in results:
        t.check(status in (202, 503), "%s: request %d: status %d" % (what, i, status))
        t.check(took < TIMEOUT_MS / 1000 + 1.5, "%s: request %d took %.1f s" % (what, i, took))
        if status == 202:
            got = stored.get(body["seq"])
            t.check(got is not None and json.loads(got).get("i") == i,
                    "%s: request %d got 202 with seq %r, which holds %r" % (what, i, body["seq"], got))
        else:
            t.check("error" in body, "%s: request %d: a JSON error" % (what, i))


def wait_healthy(t, g, what, timeout=15):
    try:
        wait_for(lambda: g.healthy(), timeout, what + ": /healthz 200 again")
    except AssertionError as e:
        t.check(False, "%s\n%s" % (e, g.log()[-2000:]))


def fresh_ingest(proxy, g):
    """Back to a well-behaved proxy and a new ingest connection through it."""
    proxy.info_rewrite = None
    proxy.msg_rewrite.clear()
    proxy.new_conns = None
    proxy.kick("gust-ingest")


def resize(frame, payload=None, size=None):
    """A MSG frame with another payload and/or another byte count in its header."""
    nl = frame.index(b"\r\n")
    head = frame[:nl].split(b" ")
    body = frame[nl + 2:-2] if payload is None else payload
    head[-1] = str(len(body) if size is None else size).encode()
    return b" ".join(head) + b"\r\n" + body + b"\r\n"


def test_malformed_pubacks(t, g, nats, proxy):
    """A PubAck that does not parse is never a 202 (issue 17: {"seq":} and {"seq":-3}
    were 202 with seq 0, a huge seq wrapped): 503, outcome unknown."""
    for bad in (b'{"seq":}', b'{"seq":-3}', b'{"stream":"GUST","seq":18446744073709551616}',
                b'{"stream":"GUST","seq":1.5}', b'{"stream":"GUST","seq":7}garbage', b'+OK'):
        proxy.msg_rewrite["gust-ingest"] = lambda f, bad=bad: resize(f, payload=bad)
        before = nats.count()
        status, body, took, _ = post(g, json.dumps({"tag": "malformed", "i": -1}).encode())
        t.eq(status, 503, "PubAck %r: status" % bad)
        t.check("outcome unknown" in body.get("error", "") and "unreadable PubAck" in body["error"],
                "PubAck %r: says the outcome is unknown and why: %r" % (bad, body))
        t.check(took < 1.5, "PubAck %r: answered at once (%.1f s)" % (bad, took))
        # The server did store it: "not stored" would have been a lie.
        t.eq(nats.count(), before + 1, "PubAck %r: the event is in the stream" % bad)
    proxy.msg_rewrite.clear()
    t.eq(post(g, b'{"tag":"after-malformed"}')[0], 202, "a good PubAck after the bad ones")


def test_byte_count_too_large(t, g, nats, proxy):
    """A MSG whose byte count is larger than its payload swallows the next frame's bytes:
    no request may get a 202 for it, and ingest comes back."""
    proxy.msg_rewrite["gust-ingest"] = lambda f: resize(f, size=len(f) - f.index(b"\r\n") - 4 + 40)
    results = post_many(g, 8, "too-large")
    acks_are_true(t, nats, results, "byte count too large")
    t.check(any(r[1] == 503 for r in results), "byte count too large: some requests refused")
    fresh_ingest(proxy, g)
    wait_healthy(t, g, "byte count too large")
    t.eq(post(g, b'{"tag":"after-too-large"}')[0], 202, "ingest after the desynchronised stream")


def test_overflowing_counts(t, g, nats, proxy):
    """INFO max_payload 18446744073709547519, then (with a sane INFO) a MSG byte count of
    2^64-1: the ASan crash of the old hand-written client. Answered, not crashed."""
    huge_info = lambda f: re.sub(rb'"max_payload":\d+', b'"max_payload":18446744073709547519', f)  # noqa: E731
    huge_count = lambda f: f[:f.index(b"\r\n")].rsplit(b" ", 1)[0] + b" 18446744073709551615\r\n"  # noqa: E731
    for what, info, msg in (("INFO max_payload 2^64-4097", huge_info, None),
                            ("MSG byte count 2^64-1", None, huge_count)):
        proxy.info_rewrite = info
        if msg is not None:
            proxy.msg_rewrite["gust-ingest"] = msg
        proxy.kick("gust-ingest")
        deadline = time.monotonic() + 3
        results = []
        while time.monotonic() < deadline:
            results += post_many(g, 3, "overflow")
        acks_are_true(t, nats, [(i, s, b, took) for i, (_, s, b, took) in enumerate(results)], what)
        t.check(all(s == 503 for _, s, _, _ in results), what + ": every request refused")
        t.check(g.proc.poll() is None, what + ": gust is alive")
        fresh_ingest(proxy, g)
        wait_healthy(t, g, what)
        t.eq(post(g, b'{"tag":"after-overflow"}')[0], 202, "ingest after " + what)


def test_half_open(t, g, nats, proxy):
    """The connection stays up and nothing comes back (issue 17: no PING, /healthz 200 for
    50 s): /healthz turns 503 within ping_interval x (max_pings_out + 1), requests are
    answered within the publish timeout, and ingest reconnects."""
    t.eq(post(g, b'{"tag":"before-freeze"}')[0], 202, "half-open: ingest before")
    frozen_at = time.monotonic()
    proxy.freeze("gust-ingest")
    inflight = post_many(g, 2, "frozen")  # sent into the frozen connection
    for i, status, body, took in inflight:
        t.eq(status, 503, "half-open: request %d" % i)
        t.check("outcome unknown" in body.get("error", ""), "half-open: the outcome is unknown: %r" % body)
        t.check(took < TIMEOUT_MS / 1000 + 1, "half-open: request %d answered in %.1f s" % (i, took))
    try:
        wait_for(lambda: g.request("GET", "/healthz")[0] == 503, KEEPALIVE_S + 2, "/healthz 503")
        noticed = time.monotonic() - frozen_at
        t.check(noticed <= KEEPALIVE_S + 1.0, "half-open noticed in %.2f s (bound %.1f s)" % (noticed, KEEPALIVE_S))
    except AssertionError as e:
        t.check(False, "half-open: %s" % e)
    wait_healthy(t, g, "half-open")
    t.check("ingest: lost the bus connection" in g.log(), "half-open: the log says so")
    t.eq(post(g, b'{"tag":"after-freeze"}')[0], 202, "half-open: ingest after the reconnect")


def count_during(proxy, seconds):
    start = proxy.accepted
    time.sleep(seconds)
    return proxy.accepted - start


def test_accept_and_close(t, g, proxy):
    """A server that accepts and closes at once, before or after the handshake (issue
    17: 8 532 connections and 17 043 log lines in 4 s): reconnects back off."""
    for mode in ("close", "close_after_handshake"):
        proxy.new_conns = mode
        lines_before = g.log().count("\n")
        proxy.kick("gust-ingest")
        n = count_during(proxy, 4)
        lines = g.log().count("\n") - lines_before
        # 100 ms doubling up to 2 s: about 6 attempts in 4 s; without back-off, hundreds.
        t.check(1 <= n <= 12, "%s: %d connections in 4 s" % (mode, n))
        t.check(lines <= 3 * n + 6, "%s: %d log lines for %d connections" % (mode, lines, n))
        t.check(g.proc.poll() is None, "%s: gust is alive" % mode)
        status, body, took, _ = post(g, b'{"tag":"closing"}')
        t.eq(status, 503, "%s: ingest meanwhile" % mode)
        t.check(took < 1, "%s: answered at once" % mode)
        fresh_ingest(proxy, g)
        wait_healthy(t, g, mode)
    t.eq(post(g, b'{"tag":"after-close-loop"}')[0], 202, "ingest after the close loops")


def test_ping_flood(t, tmp, nats):
    """PINGs as fast as the socket takes them, and nothing read (issue 17: RSS 8 MB to
    3.6 GB): memory stays bounded, the connection is dropped and remade. Its own gust,
    whose PINGs are too rare to notice the silence first: only the bound on what waits
    to be written drops the connection."""
    proxy = NatsProxy(nats.port)
    g = Gust(tmp, CONF % (proxy.url, TIMEOUT_MS, 30000, MAX_PINGS))
    try:
        wait_for(lambda: proxy.named("gust-ingest"), 10, "ingest's connection through the proxy")
        base = rss_kb(g.proc.pid)
        proxy.ping_flood("gust-ingest")
        peak = base
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "reads nothing of what gust writes" not in g.log():
            peak = max(peak, rss_kb(g.proc.pid))
            time.sleep(0.05)
        t.check("reads nothing of what gust writes" in g.log(), "ping flood: the log says the connection was dropped")
        t.check(peak - base < FLOOD_RSS_KB, "ping flood: RSS grew %d kB (from %d kB)" % (peak - base, base))
        proxy.kick("gust-ingest")
        wait_healthy(t, g, "ping flood")
        t.eq(post(g, b'{"tag":"after-flood"}')[0], 202, "ingest after the flood")
        after = rss_kb(g.proc.pid)
        t.check(after - base < FLOOD_RSS_KB, "ping flood: RSS afterwards %d kB (from %d kB)" % (after, base))
    finally:
        if t.failed:
            print(g.log()[-3000:])
        g.stop()
        proxy.close()


def wait_stopped(pid):
    """Until the kernel has stopped the process (SIGSTOP is asynchronous)."""
    def state():
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    wait_for(lambda: state() == "T", 5, "process %d stopped" % pid)


def test_frozen_server(t, tmp):
    """nats-server stopped (SIGSTOP) while events arrive: they get 503 saying the outcome
    is unknown (issue 17: "not stored" for events that were stored); retried with their
    Idempotency-Key after SIGCONT, each is stored once."""
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % (nats.url, 1000, PING_MS, MAX_PINGS))
    try:
        t.eq(post(g, b'{"tag":"frozen-before"}')[0], 202, "frozen: ingest before")
        nats.proc.send_signal(signal.SIGSTOP)
        wait_stopped(nats.proc.pid)
        keys = ["order-%d-%s" % (i, os.urandom(4).hex()) for i in range(6)]
        first = []
        for k in keys:
            s, b, took, _ = post(g, json.dumps({"tag": "frozen", "key": k}).encode(), headers={"Idempotency-Key": k})
            first.append(s)
            t.eq(s, 503, "frozen: %s" % k)
            t.check("outcome unknown" in b.get("error", "") or "not stored: bus unavailable" in b.get("error", ""),
                    "frozen: %s: %r" % (k, b))
            t.check(took < 2.5, "frozen: %s answered in %.1f s" % (k, took))
        nats.proc.send_signal(signal.SIGCONT)
        wait_healthy(t, g, "frozen", 20)
        dup = 0
        for k in keys:
            s, b, _, _ = post(g, json.dumps({"tag": "frozen", "key": k}).encode(), headers={"Idempotency-Key": k})
            t.eq(s, 202, "frozen: %s retried" % k)
            dup += b.get("duplicate", False) is True
        stored = [json.loads(m[2]) for m in nats.read_stream() if m[1] == "ev.hostile"]
        for k in keys:
            t.eq(sum(1 for m in stored if m.get("key") == k), 1, "frozen: %s stored once" % k)
        t.check(dup >= 1, "frozen: at least one retry was a duplicate of an event stored while frozen (%d)" % dup)
        # The same key again later is still the same event; the other header name works too.
        s, b, _, _ = post(g, json.dumps({"tag": "frozen", "key": keys[0]}).encode(), headers={"Nats-Msg-Id": keys[0]})
        t.check(s == 202 and b.get("duplicate") is True, "Nats-Msg-Id: the same id is a duplicate: %r" % b)
        for bad, what in (("", "empty"), ("a b", "a space"), ("x" * 201, "201 bytes")):
            s, b, _, _ = post(g, b'{"tag":"badkey"}', headers={"Idempotency-Key": bad})
            t.eq(s, 400, "Idempotency-Key %s: 400" % what)
    finally:
        if nats.proc is not None and nats.proc.poll() is None:
            nats.proc.send_signal(signal.SIGCONT)
        if t.failed:
            print(g.log()[-3000:])
        g.stop()
        nats.stop()


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    proxy = NatsProxy(nats.port)
    g = Gust(tmp, CONF % (proxy.url, TIMEOUT_MS, PING_MS, MAX_PINGS))
    try:
        wait_for(lambda: proxy.named("gust-ingest"), 10, "ingest's connection through the proxy")
        for test in (test_malformed_pubacks, test_byte_count_too_large, test_overflowing_counts, test_half_open):
            test(t, g, nats, proxy)
            t.check(g.proc.poll() is None, test.__name__ + ": gust is alive")
        test_accept_and_close(t, g, proxy)
        t.check(g.proc.poll() is None, "gust is alive at the end")
    finally:
        if t.failed:
            print(g.log()[-4000:])
        t.eq(g.stop(), 0, "clean stop")
        proxy.close()
        nats.stop()
    nats = NatsServer(tmp)
    try:
        test_ping_flood(t, tmp, nats)
    finally:
        nats.stop()
    test_frozen_server(t, tmp)
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
