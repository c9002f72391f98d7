"""POST /ingest against a real nats-server: what lands in the stream, every error
status, and a corpus of bad requests the process must survive."""
import json
import socket
import time

from gustlib import Checks, Gust, NatsServer, TempDir

CONF = """
http { listen 127.0.0.1:@PORT@; max_body 4k; }
nats { url %s; }
"""

ORDER = (b'{"id": "SO#1001", "email": "Jane.Doe@ACME.com", "total_price": "347.00", '
         b'"t": 1764400000000.123, "shipping_address": {"country": "France"}, '
         b'"line_items": [{"sku": "A-12", "quantity": "2", "unit_price_cents": 9900}], '
         b'"big": 12345678901234567890, "name": "Ren\xc3\xa9e \xe2\x82\xac"}')


def raw(port, data, read=True, timeout=5):
    """Sends raw bytes; returns what the server answered (b'' when it closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        if not read:
            return b""
        chunks = []
        try:
            while True:
                c = s.recv(65536)
                if not c:
                    break
                chunks.append(c)
                if b"\r\n\r\n" in b"".join(chunks):
                    break
        except socket.timeout:
            pass
        return b"".join(chunks)


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % nats.url)
    try:
        # Accepted events land with the exact body and subject, in order.
        sent = []
        for i, suffix in enumerate(["orders", "orders", "a.b.c", "sensor-1.temp_C", "x"]):
            body = ORDER if i == 0 else json.dumps({"n": i, "suffix": suffix}).encode()
            status, resp, headers = g.request("POST", "/ingest/" + suffix, body)
            t.eq(status, 202, "POST /ingest/%s" % suffix)
            t.eq(headers.get("content-type"), "application/json", "202 content type")
            r = json.loads(resp)
            t.eq(r["subject"], "ev." + suffix, "202 names the subject")
            sent.append((r["seq"], "ev." + suffix, body))
        got = nats.read_stream()
        t.eq(got, sent, "stream holds exactly what was accepted")

        # Every error case: status and a JSON error body.
        cases = [
            ("POST", "/ingest/orders", b'{"a": 1', 400, "truncated JSON"),
            ("POST", "/ingest/orders", b'not json', 400, "not JSON"),
            ("POST", "/ingest/orders", b'[1, 2]', 400, "an array, not an object"),
            ("POST", "/ingest/orders", b'{"a": "\xff\xfe"}', 400, "invalid UTF-8"),
            ("POST", "/ingest/orders", b'{"a": 1} {"b": 2}', 400, "two values"),
            ("POST", "/ingest/orders", b'', 400, "empty body"),
            ("POST", "/ingest/orders", b'{"a": "' + b"x" * 5000 + b'"}', 413, "over max_body"),
            ("POST", "/ingest/orders", b'{"a": "' + b"x" * 300000 + b'"}', 413, "far over max_body"),
            ("POST", "/ingest/or*ders", b'{}', 400, "wildcard *"),
            ("POST", "/ingest/orders.>", b'{}', 400, "wildcard >"),
            ("POST", "/ingest/a..b", b'{}', 400, "empty token"),
            ("POST", "/ingest/a.", b'{}', 400, "trailing dot"),
            ("POST", "/ingest/.a", b'{}', 400, "leading dot"),
            ("POST", "/ingest/a%20b", b'{}', 400, "space"),
            ("POST", "/ingest/a%01b", b'{}', 400, "control character"),
            ("POST", "/ingest/", b'{}', 400, "no suffix"),
            ("POST", "/ingest", b'{}', 400, "no suffix, no slash"),
            ("GET", "/ingest/orders", None, 405, "GET on ingest"),
            ("PUT", "/ingest/orders", b'{}', 405, "PUT on ingest"),
            ("POST", "/healthz", b'{}', 405, "POST on healthz"),
            ("GET", "/nope", None, 404, "unknown path"),
            ("GET", "/ingestx/a", None, 404, "prefix lookalike"),
        ]
        for method, path, body, want, what in cases:
            status, resp, headers = g.request(method, path, body)
            t.eq(status, want, what)
            if status >= 400:
                try:
                    t.check("error" in json.loads(resp), what + ": JSON error body")
                except ValueError:
                    t.check(False, what + ": error body is not JSON: %r" % resp[:100])
        t.eq(nats.count(), len(sent), "no rejected request reached the stream")

        status, resp, _ = g.request("GET", "/healthz")
        t.eq(status, 200, "healthz")
        status, resp, headers = g.request("GET", "/metrics")
        text = resp.decode()
        t.eq(status, 200, "metrics")
        t.check('gust_http_requests_total{route="ingest",code="202"} 5' in text, "metrics count 202s")
        t.check('gust_http_requests_total{route="ingest",code="400"}' in text, "metrics count 400s")
        t.check("gust_publish_seconds_count 5" in text, "publish latency histogram")
        t.check("gust_bus_connected 1" in text, "bus state")
        t.check("gust_ingest_bus_connected 1" in text, "ingest's connection state")
        t.check("gust_process_resident_memory_bytes" in text, "rss")

        # Keep-alive: several requests on one connection.
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", g.port, timeout=5)
        for i in range(20):
            c.request("POST", "/ingest/keepalive", body=b'{"i": %d}' % i)
            r = c.getresponse()
            r.read()
            t.eq(r.status, 202, "keep-alive request %d" % i)
        c.close()

        # A corpus of bad requests: the process survives all of them.
        p = g.port
        raw(p, b"\x00\xff\x13garbage\r\n\r\n")
        raw(p, b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Big: " + b"a" * 200000 + b"\r\n\r\n")
        raw(p, b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n\r\n")
        raw(p, b"POST /ingest/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\":", read=False)
        raw(p, b"POST /ingest/x HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n")
        raw(p, b"POST /ingest/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        deep = b'{"a":' * 1500 + b'1' + b'}' * 1500
        raw(p, b"POST /ingest/x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(deep) + deep)
        deep_arr = b'{"a":' + b'[' * 3000 + b']' * 3000 + b'}'
        status, _, _ = g.request("POST", "/ingest/deep", deep_arr)
        t.check(status in (400, 413), "JSON nested deeper than max_depth refused: %d" % status)
        # A slow client: half a request, then silence; others are still served.
        slow = socket.create_connection(("127.0.0.1", p))
        slow.sendall(b"POST /ingest/x HTTP/1.1\r\nHost: x\r\nContent-Le")
        start = time.monotonic()
        status, _, _ = g.request("POST", "/ingest/after-slow", b'{"ok": true}')
        t.eq(status, 202, "served while a slow client waits")
        t.check(time.monotonic() - start < 2, "a slow client does not block others")
        slow.close()
        t.check(g.proc.poll() is None, "gust survived the bad requests")
        t.eq(g.request("GET", "/healthz")[0], 200, "healthy after the bad requests")

        # Shutdown: SIGTERM exits promptly and cleanly.
        start = time.monotonic()
        t.eq(g.stop(), 0, "exit status after SIGTERM")
        t.check(time.monotonic() - start < 2, "exits within 2 s")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        nats.stop()
        if t.failed:
            print(g.log()[-4000:])
        tmp.cleanup()
    credentials_and_no_responders(t)
    t.done()


def credentials_and_no_responders(t):
    """Ingest's own connection takes the credentials of the URL, and a subject no stream
    takes is answered 503 at once (JetStream's "no responders"), not at the timeout."""
    tmp = TempDir()
    nats = NatsServer(tmp, args=["--user", "gust", "--pass", "s3cret-pw"])
    g = None
    try:
        g = Gust(tmp, """
http { listen 127.0.0.1:@PORT@; }
nats { url nats://gust:s3cret-pw@127.0.0.1:%d; subjects ev.orders.>; publish_timeout 5s; }
""" % nats.port)
        status, resp, _ = g.request("POST", "/ingest/eu", b'{"a": 1}')
        t.eq(status, 202, "ingest through an authenticated server: %r" % resp)
        # Ingest builds its subjects under the stream's own prefix (subjects ev.orders.>),
        # so no suffix can name a subject outside the stream.
        start = time.monotonic()
        status, resp, _ = g.request("POST", "/ingest/other", b'{"a": 1}')
        t.eq((status, json.loads(resp)["subject"]), (202, "ev.orders.other"), "under the stream's prefix")
        t.check(time.monotonic() - start < 2, "answered at once")
        t.check("s3cr" not in g.log(), "the password is not logged")
    finally:
        if g is not None:
            g.stop()
            if t.failed:
                print(g.log()[-4000:])
        nats.stop()
        tmp.cleanup()


if __name__ == "__main__":
    main()
