"""The http_poll plugin against a real nats-server and a real Python HTTP server: JSON
bodies are published (whole, split into elements, in an envelope); a non-JSON body, a
500, the server going down and an empty 204 are logged and counted while polling goes
on, and it picks up again when the server is back; the secret headers (from a file and
from the environment) and the secret query arrive at the server and never appear in
gust's log; stop is prompt in the middle of a hanging request; bad settings are refused
by `gust -t` with file:line."""
import datetime
import http.server
import json
import os
import re
import signal
import subprocess
import threading

from gustlib import BUILD, GUST, Checks, Gust, NatsServer, TempDir, wait_for

PLUGINS = os.path.join(BUILD, "plugins")
SECRETS = ["FILESECRET123", "ENVSECRET456", "QSECRET789", "CONFSECRET000"]

CONF = """
plugin_dir %(plugins)s;
plugin http_poll;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; }
source p { use http_poll; url "http://127.0.0.1:%(web)d/data?key=QSECRET789"; interval 200ms; timeout 2s;
           subject ev.poll; header "X-Trace: t1"; header_file %(tmp)s/secret.headers;
           bearer_token_env POLL_TOKEN; stats_interval 500ms; }
source split { use http_poll; url "http://127.0.0.1:%(web)d/list?token=QSECRET789"; interval 300ms;
               subject ev.list.split; split_array on; envelope on; }
source whole { use http_poll; url http://127.0.0.1:%(web)d/list; interval 300ms; subject ev.list.whole; }
source none { use http_poll; url http://127.0.0.1:%(web)d/empty; interval 300ms; subject ev.none;
              stats_interval 500ms; }
source big { use http_poll; url http://127.0.0.1:%(web)d/list; interval 300ms; subject ev.big; max_body 16;
             stats_interval 500ms; }
source hang { use http_poll; url http://127.0.0.1:%(web)d/hang; interval 1s; timeout 60s; subject ev.hang; }
"""


class Web:
    """The polled server. HTTP/1.0 (a connection per request), so stopping it really
    refuses the next poll; `mode` decides what /data answers."""

    def __init__(self, port=None):
        self.mode = "json"
        self.requests = []  # (path, mode, headers)
        self.lock = threading.Lock()
        self.n = 0
        self.release = threading.Event()
        self.port = port
        self.start()

    def start(self):
        web = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self):
                with web.lock:
                    web.requests.append((self.path, web.mode, dict(self.headers)))
                    web.n += 1
                    n, mode = web.n, web.mode
                path = self.path.split("?")[0]
                if path == "/hang":
                    web.release.wait(60)
                    return
                if path == "/empty":
                    return self.answer(204, b"")
                if path == "/list":
                    return self.answer(200, b'[{"a":1}, {"a":2,"s":"x,]"} ,{"a":3}]\n')
                if mode == "json":
                    return self.answer(200, b'{"n": %d, "src": "web"}\n' % n)
                if mode == "text":
                    return self.answer(200, b"<html>not json</html>")
                return self.answer(500, b"oops")

            def answer(self, code, body):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # max_body: gust hung up mid-body

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port or 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def seen(self, path, mode=None):
        with self.lock:
            return [r for r in self.requests if r[0].startswith(path) and (mode is None or r[1] == mode)]


def check_config(t, tmp):
    base = "plugin_dir %s;\nplugin http_poll;\nsource p {\n    use http_poll;\n    subject ev.p;\n" % PLUGINS
    cases = [
        ("", 3, "url", "missing url"),
        ("    url ftp://127.0.0.1/x;\n", 6, "url must be a URL of scheme http|https in source 'p'", "ftp url"),
        ("    url http://127.0.0.1/x;\n    interval 0;\n", 7, "interval must be at least 10ms", "interval 0"),
        ("    url http://127.0.0.1/x;\n    interval 2 s;\n", 7, "interval", "interval 2 s"),
        ("    url http://127.0.0.1/x;\n    timeout 1;\n", 7, "timeout must be at least 10ms", "timeout 1"),
        ("    url http://127.0.0.1/x;\n    header \"X-Key CONFSECRET000\";\n", 7, "header #1 is not \"Name: value\"",
         "header without a colon"),
        ("    url http://127.0.0.1/x;\n    bearer_token_file t;\n    bearer_token_env T;\n", 8,
         "bearer_token_file and bearer_token_env are exclusive", "two bearer tokens"),
        ("    url http://127.0.0.1/x;\n    header \"Authorization: Basic CONFSECRET000\";\n    bearer_token_env T;\n", 7,
         "an Authorization header and a bearer token are exclusive", "Authorization twice"),
        ("    url http://127.0.0.1/x;\n    envelope maybe;\n", 7, "envelope", "envelope maybe"),
    ]
    for body, line, want, what in cases:
        path = tmp.file("bad.conf", base + body + "}\n")
        p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True)
        t.eq(p.returncode, 1, what + ": refused")
        t.check("%s:%d:" % (path, line) in p.stderr, "%s: names %s:%d: %s" % (what, path, line, p.stderr))
        t.check(want in p.stderr, "%s: %r in %r" % (what, want, p.stderr))
        t.check("CONFSECRET000" not in p.stderr, what + ": the secret is not shown")
    path = tmp.file("good.conf", base + "    url https://example.com/v1?x=1;\n    bearer_token_env T;\n}\n")
    p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True)
    t.eq(p.returncode, 0, "a good http_poll passes gust -t: " + p.stderr)


def check_start_errors(t, tmp, web_port):
    """Secret files and variables are read at start: a missing one stops gust from
    starting, with an error naming host.conf:line and the file, not a secret."""
    nats = NatsServer(tmp)
    try:
        for key, val, want in [("header_file", "%s/absent.headers" % tmp.path,
                                "header_file: %s/absent.headers: No such file" % tmp.path),
                               ("bearer_token_env", "GUST_TEST_UNSET_TOKEN",
                                "bearer_token_env: $GUST_TEST_UNSET_TOKEN is not set or empty")]:
            conf = ("plugin_dir %s;\nplugin http_poll;\nhttp { listen 127.0.0.1:@PORT@; }\nnats { url %s; }\n"
                    "source p {\n    use http_poll;\n    url http://127.0.0.1:%d/data;\n    subject ev.p;\n"
                    "    %s %s;\n}\n" % (PLUGINS, nats.url, web_port, key, val))
            g = Gust(tmp, conf, wait_healthy=False)
            try:
                rc = g.proc.wait(30)
            finally:
                if g.proc.poll() is None:
                    g.proc.kill()
            t.check(rc != 0, key + ": gust does not start")
            t.check("%s:9: %s" % (g.conf, want) in g.log(), "%s: the error names host.conf:9: %s" % (key, g.log()[-600:]))
    finally:
        nats.stop()


def stream(nats, subject):
    return [json.loads(d) for _, s, d in nats.read_stream() if s == subject]


def main():
    t = Checks()
    tmp = TempDir()
    check_config(t, tmp)

    web = Web()
    tmp.file("secret.headers", "# secrets for the test\n\nX-Api-Key: FILESECRET123\n")
    nats = NatsServer(tmp)
    conf = CONF % {"plugins": PLUGINS, "nats": nats.url, "web": web.port, "tmp": tmp.path}
    g = Gust(tmp, conf, env={"POLL_TOKEN": "ENVSECRET456"})
    base = "http://127.0.0.1:%d" % web.port
    try:
        # 1. JSON bodies: as served; an array whole, or split with an envelope each.
        got = wait_for(lambda: (lambda m: m if len(m) >= 3 else None)(stream(nats, "ev.poll")), 15, "3 polls")
        t.check(all(set(m) == {"n", "src"} and m["src"] == "web" for m in got), "bodies as served: %r" % got[:3])
        t.check(all(a["n"] < b["n"] for a, b in zip(got, got[1:])), "one message per poll, in order")
        whole = wait_for(lambda: stream(nats, "ev.list.whole"), 10, "the array, whole")
        t.eq(whole[0], [{"a": 1}, {"a": 2, "s": "x,]"}, {"a": 3}], "an array body is one message by default")
        split = wait_for(lambda: (lambda m: m if len(m) >= 6 else None)(stream(nats, "ev.list.split")), 10,
                         "the array, split")
        t.eq([m["body"] for m in split[:6]], [{"a": 1}, {"a": 2, "s": "x,]"}, {"a": 3}] * 2,
             "split_array: one message per element, in order")
        e = split[0]
        t.eq(sorted(e), ["body", "fetched_at", "status", "url"], "envelope members")
        t.eq(e["url"], base + "/list", "envelope url without the query (it may hold credentials)")
        t.eq(e["status"], 200, "envelope status")
        wall = datetime.datetime.strptime(e["fetched_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        t.check(abs((datetime.datetime.now(datetime.timezone.utc) - wall).total_seconds()) < 60, "fetched_at is now: " + e["fetched_at"])
        t.eq(split[0]["fetched_at"], split[2]["fetched_at"], "one fetch, one fetched_at for its elements")

        # 2. The secrets arrive at the server.
        hdrs = web.seen("/data")[0][2]
        t.eq(hdrs.get("X-Api-Key"), "FILESECRET123", "header_file's header sent")
        t.eq(hdrs.get("Authorization"), "Bearer ENVSECRET456", "bearer_token_env sent")
        t.eq(hdrs.get("X-Trace"), "t1", "literal header sent")
        t.eq(hdrs.get("Accept"), "application/json", "Accept: application/json by default")
        t.check("key=QSECRET789" in web.seen("/data")[0][0], "the query is sent")

        # 3. Not JSON, then 500, then down: each logged once, counted, polling goes on.
        def failures(what):
            return g.log().count("[source:p] poll failed: " + what)

        web.mode = "text"
        wait_for(lambda: len(web.seen("/data", "text")) >= 3, 10, "3 polls answered with text")
        web.mode = "500"
        wait_for(lambda: len(web.seen("/data", "500")) >= 3, 10, "3 polls answered with 500")
        t.eq(failures("body from %s/data is not JSON" % base), 1, "non-JSON logged once for its streak")
        t.eq(failures("http 500 from %s/data" % base), 1, "500 logged once for its streak")
        web.stop()
        wait_for(lambda: failures("%s/data: connect: Connection refused" % base) == 1, 10, "connection refused logged")
        n_before = len(stream(nats, "ev.poll"))
        web = Web(web.port)
        wait_for(lambda: "[source:p] polling %s/data works again after" % base in g.log(), 10, "recovery logged")
        wait_for(lambda: len(stream(nats, "ev.poll")) >= n_before + 2, 10, "publishing again after the outage")
        stats = r"\[source:p\] \d+ polls: \d+ ok, \d+ empty, [1-9]\d* not JSON, [1-9]\d* HTTP errors, " \
                r"[1-9]\d* connection errors, 0 too large"
        line = wait_for(lambda: re.search(stats + ".*", g.log()), 10, "the error counters in the log")
        print("counters: " + line.group(0), flush=True)
        t.check(re.search(r"\[source:none\] \d+ polls: 0 ok, [1-9]\d* empty, 0 not JSON", g.log()) is not None,
                "204s counted as empty")
        t.eq(stream(nats, "ev.none"), [], "an empty body publishes nothing")
        t.check("[source:big] poll failed: %s/list: body larger than max_body (16 bytes)" % base in g.log(),
                "a body over max_body is logged")
        t.check(re.search(r"\[source:big\] \d+ polls: 0 ok, .* [1-9]\d* too large", g.log()) is not None,
                "and counted")
        t.eq(stream(nats, "ev.big"), [], "and not published")

        # 4. A reload stops every instance promptly, the hanging request included, and the
        # fresh instances poll again.
        n_before = len(stream(nats, "ev.poll"))
        g.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "reloaded " in g.log(), 20, "the reload")
        wait_for(lambda: len(stream(nats, "ev.poll")) >= n_before + 2, 10, "polling after the reload")
        t.eq(g.stop(), 0, "clean stop")
        stops = [int(x) for x in re.findall(r"\[source:hang\] stopped in (\d+) ms", g.log())]
        t.eq(len(stops), 2, "the hanging poller stopped at the reload and at the end")
        t.check(stops and max(stops) < 500, "stop is prompt mid-request: %r ms" % stops)
        print("stop in the middle of a hanging request: %r ms" % stops, flush=True)
        t.check(re.search(r"\[source:p\] stopping: \d+ polls", g.log()) is not None, "final counters logged")
        log = g.log()
        for s in SECRETS:
            t.check(s not in log, "secret %s is not in gust's log" % s)
    finally:
        web.release.set()
        if g.proc.poll() is None:
            g.proc.kill()
        nats.stop()
        web.stop()
        if t.failed:
            print(g.log()[-5000:])
    check_start_errors(t, tmp, web.port)
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
