"""HTTPS on gust's own listener (`listen ADDR ssl;` with ssl_certificate and
ssl_certificate_key, nginx's names), for devices that post straight to gust: curl and
Python with the test CA get their answers, a client without the CA is refused by TLS, a
plain-HTTP client gets nothing and the process stays up; gust -t checks the files with
their file:line."""
import http.client
import json
import os
import socket
import ssl
import subprocess

from gustlib import GUST, Checks, Gust, NatsServer, TempDir, make_certs, wait_for

CONF = """
http {
    listen 127.0.0.1:@PORT@ ssl;
    ssl_certificate %(cert)s;
    ssl_certificate_key %(key)s;
}
nats { url %(nats)s; }
"""


def curl(*args):
    p = subprocess.run(["curl", "-sS", "--max-time", "10"] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def gust_t(tmp, text):
    path = tmp.file("check.conf", text)
    p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True)
    return p.returncode, p.stderr, path


def main():
    t = Checks()
    tmp = TempDir()
    c = make_certs(tmp)
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % {"cert": c["cert"], "key": c["key"], "nats": nats.url}, wait_healthy=False)
    base = "https://localhost:%d" % g.port
    try:
        wait_for(lambda: curl("--cacert", c["ca"], base + "/healthz")[1].startswith('{"status":"ok"}'), 20,
                 "/healthz over HTTPS")
        t.check("(port %d, HTTPS)" % g.port in g.log(), "the log says HTTPS")
        rc, out, err = curl("--cacert", c["ca"], "-d", '{"a":1}', "-w", "\n%{http_code}", base + "/ingest/tls")
        body, code = out.rsplit("\n", 1)
        t.eq((rc, code), (0, "202"), "curl POST /ingest over HTTPS: %s" % err)
        t.eq(json.loads(body)["subject"], "ev.tls", "the 202 body")
        rc, out, _ = curl("--cacert", c["ca"], "-w", "\n%{http_code}", base + "/nope")
        t.eq(out.rsplit("\n", 1)[1], "404", "an error over HTTPS")
        t.check(json.loads(out.rsplit("\n", 1)[0])["error"], "is Gust's JSON")

        # Python's http.client, keep-alive: several requests on one TLS connection.
        ctx = ssl.create_default_context(cafile=c["ca"])
        conn = http.client.HTTPSConnection("localhost", g.port, context=ctx, timeout=10)
        for i in range(3):
            conn.request("POST", "/ingest/tls", json.dumps({"i": i}).encode())
            r = conn.getresponse()
            t.eq(r.status, 202, "http.client POST %d" % i)
            r.read()
        conn.close()
        t.eq([json.loads(m[2]) for m in nats.read_stream()][-3:], [{"i": 0}, {"i": 1}, {"i": 2}],
             "what HTTPS posted is in the stream")

        # Without the CA: the client refuses the certificate; at 127.0.0.1 with the CA: the
        # certificate names that address too.
        rc, _, err = curl(base + "/healthz")
        t.eq(rc, 60, "curl without the CA: certificate problem (%s)" % err.strip())
        rc, out, _ = curl("--cacert", c["ca"], "https://127.0.0.1:%d/healthz" % g.port)
        t.eq((rc, out.strip()), (0, '{"status":"ok"}'), "by address")
        # Plain HTTP to the TLS port: no HTTP answer, and gust goes on.
        with socket.create_connection(("127.0.0.1", g.port), timeout=5) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                got = s.recv(4096)
            except (ConnectionResetError, socket.timeout):
                got = b""
        t.check(not got.startswith(b"HTTP/"), "plain HTTP gets no HTTP answer: %r" % got[:40])
        # A client that connects and says nothing, and one that sends garbage: still up.
        idle = socket.create_connection(("127.0.0.1", g.port), timeout=5)
        with socket.create_connection(("127.0.0.1", g.port), timeout=5) as s:
            s.sendall(os.urandom(2048))
        rc, out, _ = curl("--cacert", c["ca"], base + "/healthz")
        t.eq(out.strip(), '{"status":"ok"}', "HTTPS still answers")
        idle.close()
        t.check(g.proc.poll() is None, "gust is alive")
    except AssertionError as e:
        t.check(False, "%s\n%s" % (e, g.log()[-3000:]))
    finally:
        t.eq(g.stop(), 0, "clean stop")
        nats.stop()

    # gust -t: the listener's TLS settings, each error naming file:line.
    missing = os.path.join(tmp.path, "missing.pem")
    cases = [
        ("http {\n  listen 127.0.0.1:8443 ssl;\n}\n", ":2: listen 127.0.0.1:8443 ssl needs ssl_certificate",
         "ssl without a certificate"),
        ("http {\n  listen 127.0.0.1:8443;\n  ssl_certificate %s;\n}\n" % c["cert"],
         ":3: ssl_certificate, but the listener is plain HTTP", "a certificate for a plain listener"),
        ("http {\n  listen 127.0.0.1:8443 tls;\n}\n", ":2: listen 127.0.0.1:8443 tls: only `ssl`", "a wrong flag"),
        ("http {\n  listen 127.0.0.1:8443 ssl;\n  ssl_certificate %s;\n  ssl_certificate_key %s;\n}\n"
         % (missing, c["key"]), ":3: ssl_certificate %s: not a PEM" % missing, "a missing certificate"),
        ("http {\n  listen 127.0.0.1:8443 ssl;\n  ssl_certificate %s;\n  ssl_certificate_key %s;\n}\n"
         % (c["cert"], c["client_key"]), ":4: ssl_certificate_key %s is not the key of" % c["client_key"],
         "the key of another certificate"),
        ("http {\n  listen 127.0.0.1:8443 ssl;\n  ssl_certificate %s;\n  ssl_certificate_key %s;\n}\n"
         % (c["cert"], c["ca"]), ":4: ssl_certificate_key %s: not a PEM private key" % c["ca"], "not a key"),
        ("http {\n  listen nowhere;\n}\n", ":2: invalid address 'nowhere'", "a bad address"),
    ]
    for text, want, what in cases:
        rc, err, path = gust_t(tmp, text)
        t.eq(rc, 1, what + ": exit status")
        t.check(path + want in err, "%s: %r not in %r" % (what, path + want, err))
    rc, err, _ = gust_t(tmp, "http {\n  listen 127.0.0.1:8443 ssl;\n  ssl_certificate %s;\n  ssl_certificate_key %s;\n}\n"
                        % (c["cert"], c["key"]))
    t.eq(rc, 0, "a good HTTPS listener: %s" % err)
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
