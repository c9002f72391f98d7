"""Bad input answered cleanly (issue 17, section 2), against the real binary and a real
nats-server: every error of the front is Gust's JSON, including those h2o makes itself;
a client that keeps sending a body far over max_body still reads its 413; JSON that
RFC 8259 forbids (form feed or vertical tab as white space, UTF-8 that is not well
formed, lone surrogate escapes, nesting past max_depth) is refused at ingest; flows read
the same bytes one documented way (refused to the dead-letter stream, or a lone
surrogate escape as U+FFFD) and keep a number's value (-0, underflow). Each case checks
the status, the JSON body, that the process is alive, and that nothing accepted is lost;
the oversized uploads also check that memory stays bounded."""
import http.client
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

from gustlib import GUST, Checks, Gust, NatsServer, TempDir, nats_publish, wait_for

CONF = """
http { listen 127.0.0.1:@PORT@; max_body 1m; %(extra)s }
nats { url %(nats)s; max_deliver 2; retry_delay 100ms; }
flow echo { script %(tmp)s/echo.lua; source ev.raw; }
"""

ECHO = """
-- emits each event as it was decoded, and the type of ev.n where there is one
return {
  on_event = function(ev)
    emit("ev.echo.out", { ev = ev, n_type = type(ev.n), n_text = tostring(ev.n) })
  end,
}
"""


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def raw(port, data, timeout=5):
    """Sends raw bytes, returns (status, JSON body or None, raw answer) once the server
    closes or the answer is complete."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        got = b""
        try:
            while True:
                c = s.recv(65536)
                if not c:
                    break
                got += c
                head, sep, rest = got.partition(b"\r\n\r\n")
                if sep:
                    n = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
                    if n and len(rest) >= n[0]:
                        break
        except (socket.timeout, ConnectionResetError):
            pass
    head, _, body = got.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ")[1])
    except (IndexError, ValueError):
        return None, None, got
    try:
        return status, json.loads(body), got
    except ValueError:
        return status, None, got


def json_error(t, status, body, want_status, what, part=None):
    t.eq(status, want_status, what)
    try:
        err = json.loads(body)["error"] if isinstance(body, (bytes, str)) else body["error"]
        t.check(part is None or part in err, "%s: %r names %r" % (what, err, part))
    except (ValueError, KeyError, TypeError):
        t.check(False, "%s: not Gust's JSON error: %r" % (what, body[:200] if body else body))


def front_errors(t, g, nats):
    """Errors h2o answers itself, and uploads far over max_body from clients that keep
    sending (they write the whole body before they read)."""
    big = b'{"a":"' + b"x" * (3 << 20) + b'"}'
    c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=20)
    try:
        c.request("POST", "/ingest/big", big)
        r = c.getresponse()
        json_error(t, r.status, r.read(), 413, "http.client, 3 MiB with max_body 1m", "body over 1048576 bytes")
    except OSError as e:
        t.check(False, "http.client, 3 MiB: no answer but %r" % e)
    finally:
        c.close()
    try:
        urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/ingest/big" % g.port, data=big),
                               timeout=20)
        t.check(False, "urllib, 3 MiB: accepted")
    except urllib.error.HTTPError as e:
        json_error(t, e.code, e.read(), 413, "urllib, 3 MiB")
    except OSError as e:
        t.check(False, "urllib, 3 MiB: no answer but %r" % e)
    # Chunked, without a length h2o could refuse up front: refused once it reaches the limit.
    c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=20)
    try:
        c.request("POST", "/ingest/big", (big[i:i + 65536] for i in range(0, len(big), 65536)),
                  encode_chunked=True, headers={"Transfer-Encoding": "chunked"})
        r = c.getresponse()
        json_error(t, r.status, r.read(), 413, "chunked 3 MiB")
    except OSError as e:
        t.check(False, "chunked 3 MiB: no answer but %r" % e)
    finally:
        c.close()
    # Just over and just at the limit.
    status, body, _ = g.request("POST", "/ingest/edge", b'{"a":"' + b"x" * ((1 << 20) - 7) + b'"}')
    json_error(t, status, body, 413, "max_body + 1 bytes")
    status, body, _ = g.request("POST", "/ingest/edge", b'{"a":"' + b"x" * ((1 << 20) - 400) + b'"}')
    t.eq(status, 202, "just under max_body: %r" % body[:100])

    # What h2o used to answer in plain text.
    hdrs = b"".join(b"X-H%d: v\r\n" % i for i in range(1000))
    for data, want, what, part in [
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + hdrs + b"\r\n", 431, "1 000 request headers", "header lines"),
        (b"GARBAGE\r\n\r\n", 400, "no request line", "malformed"),
        (b"GET /healthz HTTP/1.1\r\nHo st: x\r\n\r\n", 400, "a space in a header name", "malformed"),
        (b"POST /ingest/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400,
         "broken chunked encoding", "chunked"),
        (b"POST /ingest/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400,
         "unknown transfer encoding", "transfer-encoding"),
        (b"POST /ingest/x HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", 400, "negative length", "content-length"),
        (b"POST /ingest/x HTTP/1.1\r\nHost: x\r\nExpect: tea\r\nContent-Length: 2\r\n\r\n{}", 417,
         "unknown Expect", "expectation"),
        (b"POST /ingest/x HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n", 413, "huge Content-Length",
         "body over"),
    ]:
        status, body, got = raw(g.port, data)
        t.eq(status, want, what + ": %r" % got[:80])
        t.check(body is not None and part in body.get("error", ""), "%s: Gust's JSON error: %r" % (what, got[-200:]))
        t.check(b"content-type: application/json" in got.lower(), what + ": JSON content type")

    # A client that sends 200 MB after a refused Content-Length: dropped after a bound,
    # and the process stays up.
    s = socket.create_connection(("127.0.0.1", g.port), timeout=10)
    s.sendall(b"POST /ingest/x HTTP/1.1\r\nHost: x\r\nContent-Length: 200000000\r\n\r\n")
    sent, chunk = 0, b"y" * 65536
    try:
        while sent < 200000000:
            s.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    s.close()
    t.check(sent < 200000000, "a client sending 200 MB is cut off (after %d bytes)" % sent)
    t.check(sent >= 16 << 20, "after the linger bound, not at once (%d bytes)" % sent)

    # Memory stays bounded over many refused uploads, and every lingering socket goes.
    before = rss_kb(g.proc.pid)
    for i in range(20):
        c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=20)
        c.request("POST", "/ingest/big", big)
        r = c.getresponse()
        r.read()
        c.close()
        t.check(r.status == 413, "upload %d: 413" % i)
    grown = rss_kb(g.proc.pid) - before
    t.check(grown < 20000, "20 uploads of 3 MiB grew RSS by %d KiB" % grown)

    def connections():
        text = g.request("GET", "/metrics")[1].decode()
        line = [l for l in text.splitlines() if l.startswith("gust_http_connections ")]
        return int(float(line[0].split()[1])) if line else -1
    wait_for(lambda: connections() == 1, 10, "lingering connections closed (only the /metrics one open)")
    text = g.request("GET", "/metrics")[1].decode()
    t.check('gust_http_requests_total{route="other",code="413"}' in text, "h2o's 413s are counted")
    t.check(g.proc.poll() is None, "alive after the oversized uploads")


def ingest_json(t, g, nats):
    """RFC 8259 at ingest: 400 with the reason, nothing stored."""
    before = nats.count()
    deep_ok = b'{"a":' + b"[" * 199 + b"]" * 199 + b"}"
    deep_bad = b'{"a":' + b"[" * 200 + b"]" * 200 + b"}"
    cases = [
        (b'{"v":[\f]}', "form feed"),
        (b'{\f"a":1}', "form feed"),
        (b'{"a":1}\v', "vertical tab"),
        (b'{"a":"\xed\xa0\x80"}', "invalid UTF-8"),
        (b'{"a":"\xc0\xaf"}', "invalid UTF-8"),
        (b'{"a":"\xf4\x90\x80\x80"}', "invalid UTF-8"),
        (b'{"\xe0\x80\x80":1}', "invalid UTF-8"),
        (b'{"a":"\\udc00"}', "lone surrogate"),
        (b'{"a":"\\ud800abc"}', "lone surrogate"),
        (b'{"a":"\\ud800\\u0041"}', "lone surrogate"),
        (deep_bad, "nested deeper than 200"),
        (b'{"a":' * 10000 + b"1" + b"}" * 10000, "nested deeper than 200"),
    ]
    for body, part in cases:
        status, resp, _ = g.request("POST", "/ingest/bad", body)
        json_error(t, status, resp, 400, "ingest %r" % body[:30], part)
    t.eq(nats.count(), before, "nothing refused reached the stream")
    good = [b'{"a":"\\ud83d\\ude00 \xf0\x9f\x98\x80 \xed\x9f\xbf \xf4\x8f\xbf\xbf","b":" \\f "}', deep_ok,
            b' \t\r\n{"a":1}\r\n']
    for body in good:
        status, resp, _ = g.request("POST", "/ingest/good", body)
        t.eq(status, 202, "accepted %r: %r" % (body[:30], resp))
    stored = [m[2] for m in nats.read_stream() if m[1] == "ev.good"]
    t.eq(stored, good, "stored byte for byte")


def flows(t, g, nats):
    """The flow decoder on bytes that bypass ingest (published straight to the bus)."""
    nats_publish(nats.port, [
        ("ev.raw", b'{"k":"hi","s":"\\ud800abc|\\ud800\\\\|x\\udc00y|\\ud800\\u0041"}'),
        ("ev.raw", b'{"k":"neg0","n":-0}'),
        ("ev.raw", b'{"k":"under","n":1e-400}'),
        ("ev.raw", b'{"k":"sub","n":5e-324}'),
        ("ev.raw", b'{"k":"over","n":-1e400}'),
        ("ev.raw", b'{"k":"ff",\f"n":1}'),
        ("ev.raw", b'{"k":"sur","s":"\xed\xa0\x80"}'),
        ("ev.raw", b'{"k":"ovl","s":"\xc0\xaf"}'),
    ])

    def outs():
        return {json.loads(m[2])["ev"]["k"]: m[2] for m in nats.read_stream() if m[1] == "ev.echo.out"}

    def dead():
        return [json.loads(m[2]) for m in nats.read_stream("GUST_DLQ") if m[1] == "dlq.echo"]

    wait_for(lambda: len(outs()) == 5 and len(dead()) == 3, 15, "5 emits and 3 dead letters")
    o = outs()
    t.eq(json.loads(o["hi"])["ev"]["s"], "\ufffdabc|\ufffd\\|x\ufffdy|\ufffdA", "lone surrogates become U+FFFD")
    for k, raw_bytes in o.items():
        try:
            raw_bytes.decode("utf-8")
            t.check(True, "")
        except UnicodeDecodeError:
            t.check(False, "emit %s is not UTF-8: %r" % (k, raw_bytes))
    t.check(b'"ev":{' in o["neg0"] and b'"n":-0' in o["neg0"], "-0 stays -0: %r" % o["neg0"])
    t.eq(json.loads(o["neg0"])["n_type"], "number", "-0 is a number")
    t.check(b'"n":1e-400' in o["under"], "an underflowing number keeps its text: %r" % o["under"])
    t.eq(json.loads(o["sub"])["n_type"], "number", "a subnormal is a number")
    t.eq(json.loads(o["sub"])["ev"]["n"], 5e-324, "a subnormal keeps its value")
    t.check(b'"n":-1e400' in o["over"], "an overflowing number keeps its text: %r" % o["over"])
    d = dead()
    why = " ".join(x["error"] for x in d)
    t.check("form feed" in why, "the form feed is named: %s" % why)
    t.eq(why.count("invalid UTF-8"), 2, "both bad UTF-8 events say so: %s" % why)
    t.eq(sum(1 for x in d if "payload_base64" in x), 2, "the non-UTF-8 ones kept as base64")
    t.check(all(x["attempts"] == 1 for x in d), "dead-lettered at once, not retried")


def config_checks(t, tmp, nats):
    """max_depth is checked by gust -t with file:line, and takes effect."""
    p = tmp.file("bad.conf", "http {\n  max_depth 0;\n}\nnats { url %s; }\n" % nats.url)
    r = subprocess.run([GUST, "-t", "-c", p], capture_output=True, text=True)
    t.eq(r.returncode, 1, "gust -t refuses max_depth 0")
    t.check("bad.conf:2" in r.stdout + r.stderr and "max_depth" in r.stdout + r.stderr,
            "names file:line and the key: %s" % (r.stdout + r.stderr))
    h = subprocess.run([GUST, "--help"], capture_output=True, text=True).stdout
    t.check("max_depth" in h, "--help lists max_depth")
    g2 = Gust(tmp, "http { listen 127.0.0.1:@PORT@; max_depth 3; }\nnats { url %s; }\n" % nats.url)
    try:
        t.eq(g2.request("POST", "/ingest/d", b'{"a":[[1]]}')[0], 202, "3 deep with max_depth 3")
        status, body, _ = g2.request("POST", "/ingest/d", b'{"a":[[[1]]]}')
        json_error(t, status, body, 400, "4 deep with max_depth 3", "max_depth")
    finally:
        g2.stop()


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("echo.lua", ECHO)
    nats = NatsServer(tmp)
    # Under AddressSanitizer freed memory waits in a quarantine (256 MB by default): keep
    # it small, so the bound on RSS below measures gust, not the sanitizer. Ignored by
    # a normal build.
    asan = os.environ.get("ASAN_OPTIONS", "")
    g = Gust(tmp, CONF % {"nats": nats.url, "tmp": tmp.path, "extra": ""},
             env={"ASAN_OPTIONS": (asan + ":" if asan else "") + "quarantine_size_mb=4"})
    try:
        front_errors(t, g, nats)
        ingest_json(t, g, nats)
        flows(t, g, nats)
        t.check(g.proc.poll() is None, "gust is alive at the end")
        t.eq(g.request("GET", "/healthz")[0], 200, "and healthy")
        t.eq(g.stop(), 0, "clean exit")
        config_checks(t, tmp, nats)
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        if t.failed:
            print(g.log()[-4000:])
        nats.stop()
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
