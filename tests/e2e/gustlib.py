"""Helpers for the end-to-end tests: real servers on free loopback ports, temp dirs,
waiting on conditions, cleanup by PID."""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("GUST_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
GUST = os.path.join(BUILD, "gust")
STREAM_READ = os.path.join(BUILD, "tests", "gust-stream-read")
KAFKA_MOCK = os.path.join(BUILD, "tests", "gust-kafka-mock")
SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _sanitized():
    try:
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            return "GUST_SANITIZE:BOOL=ON" in f.read()
    except OSError:
        return False


# The admin token a test's host.conf takes by putting ADMIN_TOKEN_CONF in its http block:
# without a token the routes that change state or run code (POST /reload, /dlq/replay,
# /dlq/purge, /replay) answer 403. Gust passes the variable to every gust it starts, and
# Gust.request sends the token when the conf names it and the caller gave no
# Authorization of its own.
ADMIN_TOKEN = "gustlib-admin-5b9e04c1d7"
ADMIN_TOKEN_ENV = "GUST_E2E_ADMIN_TOKEN"
ADMIN_TOKEN_CONF = "admin_token_env %s;" % ADMIN_TOKEN_ENV


# An AddressSanitizer build: freed memory sits in ASan's quarantine (256 MB), so RSS
# bounds are looser there.
SANITIZED = _sanitized()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.01)


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class TempDir:
    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="gust-test-")

    def file(self, name, text):
        p = os.path.join(self.path, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        return p

    def cleanup(self):
        if os.environ.get("GUST_TEST_KEEP"):  # for a post-mortem: logs, stores, configs
            print("kept %s" % self.path)
            return
        shutil.rmtree(self.path, ignore_errors=True)


def read_stream(url, stream="GUST", client_args=()):
    """[(seq, subject, bytes)] of a stream, read back with nats.c. client_args are the
    tool's connection options (--tls-ca FILE, --creds FILE, ...)."""
    out = subprocess.run([STREAM_READ] + list(client_args) + [url, stream], check=True, capture_output=True).stdout
    msgs, i = [], 0
    while i < len(out):
        nl = out.index(b"\n", i)
        seq, subject, n = out[i:nl].split(b" ")
        n = int(n)
        msgs.append((int(seq), subject.decode(), out[nl + 1:nl + 1 + n]))
        i = nl + 1 + n + 1
    return msgs


class NatsServer:
    """A real nats-server with JetStream, its store in a temp dir."""

    def __init__(self, tmp, port=None, args=(), conf=None, client_args=(), scheme="nats", host="127.0.0.1"):
        self.port = port or free_port()
        self.args = list(args)  # more nats-server options, e.g. ["--user", "u", "--pass", "p"]
        self.store = os.path.join(tmp.path, "nats-%d" % self.port)
        self.log_path = os.path.join(tmp.path, "nats-%d.log" % self.port)
        self.log = open(self.log_path, "ab")
        # conf: the text of a configuration file (tls { }, authorization { }, operator
        # mode); client_args: how gust-stream-read connects to it; scheme and host: of url.
        self.conf = None
        if conf is not None:
            self.conf = tmp.file("nats-%d.conf" % self.port, conf)
        self.client_args = list(client_args)
        self.scheme = scheme
        self.host = host
        self.proc = None
        self.start()

    @property
    def url(self):
        return "%s://%s:%d" % (self.scheme, self.host, self.port)

    def start(self):
        conf = ["-c", self.conf] if self.conf else []
        self.proc = subprocess.Popen(
            ["nats-server"] + conf + ["-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", self.store] + self.args,
            stdout=self.log, stderr=self.log)
        wait_for(lambda: port_open(self.port), 10, "nats-server on %d" % self.port)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def read_stream(self, stream="GUST"):
        return read_stream(self.url, stream, self.client_args)

    def payloads(self, subject, stream="GUST"):
        """The JSON payloads stored on subject, in stream order."""
        return [json.loads(m[2]) for m in self.read_stream(stream) if m[1] == subject]

    def count(self, stream="GUST"):
        out = subprocess.run([STREAM_READ] + self.client_args + [self.url, stream, "--count"], check=True,
                             capture_output=True)
        return int(out.stdout)


class Gust:
    """The gust binary on a host.conf written into a temp dir."""

    def __init__(self, tmp, conf, port=None, wait_healthy=True, env=None):
        self.tmp = tmp
        self.port = port or free_port()
        self.conf = tmp.file("host.conf", conf.replace("@PORT@", str(self.port)))
        self.logpath = os.path.join(tmp.path, "gust-%d.log" % self.port)
        self.proc = subprocess.Popen([GUST, "-c", self.conf], stdout=open(self.logpath, "ab"),
                                     stderr=subprocess.STDOUT,
                                     env=dict(os.environ, **dict({ADMIN_TOKEN_ENV: ADMIN_TOKEN}, **(env or {}))))
        if wait_healthy:
            wait_for(lambda: self.healthy(), 20, "gust /healthz 200")

    def healthy(self):
        if self.proc.poll() is not None:
            raise AssertionError("gust exited with %s:\n%s" % (self.proc.returncode, self.log()))
        try:
            return self.request("GET", "/healthz")[0] == 200
        except OSError:
            return False

    def uses_admin_token(self):
        """True when the host.conf as it is now takes gustlib's admin token."""
        try:
            with open(self.conf) as f:
                return ADMIN_TOKEN_ENV in f.read()
        except OSError:
            return False

    def request(self, method, path, body=None, headers=None, timeout=10):
        headers = dict(headers or {})
        if not any(k.lower() == "authorization" for k in headers) and self.uses_admin_token():
            headers["Authorization"] = "Bearer " + ADMIN_TOKEN
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers)
            r = c.getresponse()
            return r.status, r.read(), {k.lower(): v for k, v in r.getheaders()}
        finally:
            c.close()

    def log(self):
        with open(self.logpath, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout)
        return self.proc.returncode


def children_of(pid):
    """PIDs whose parent is pid."""
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    kids.append(int(d))
            except (OSError, IndexError):
                pass
    return kids


class Checks:
    """Counts checks and prints a closing line; exit status 1 on any failure."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: " + what, flush=True)

    def eq(self, got, want, what):
        self.check(got == want, "%s: got %r, want %r" % (what, got, want))

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        sys.exit(1 if self.failed else 0)


def plugin_check(tmp, nats, plugin, units, *args):
    """gust ARGS (e.g. -t) on a fresh host.conf that loads `plugin` and holds `units` on its
    line 3: (the file's path, the finished process)."""
    path = tmp.file("check.conf", "plugin_dir %s;\nplugin %s;\n%s\nnats { url %s; }\nhttp { listen 127.0.0.1:%d; }\n"
                    % (os.path.join(BUILD, "plugins"), plugin, units, nats.url, free_port()))
    return path, subprocess.run([GUST, *args, "-c", path], capture_output=True, text=True, timeout=30)


def check_config_errors(t, tmp, nats, plugin, cases, *args):
    """Each (units, message) of cases refused by gust ARGS with `file:3: ...message`."""
    for units, want in cases:
        path, p = plugin_check(tmp, nats, plugin, units, *args)
        t.check(p.returncode != 0, "gust %s refuses: %s" % (" ".join(args), want))
        t.check(path + ":3: " in p.stderr and want in p.stderr, "%r with file:line in %r" % (want, p.stderr[-600:]))


def kill_all(procs, nats, failed=False):
    """The end of a test, passed or not: every gust still running killed, then nats-server;
    when the test failed, the tail of each gust's log."""
    for g in procs:
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait(10)
    nats.stop()
    if failed:
        for g in procs:
            print("--- gust %s log ---\n%s" % (g.conf, g.log()[-3000:]))


def nats_publish(port, msgs):
    """Publishes [(subject, bytes)] or [(subject, {header: value}, bytes)] with the raw NATS
    protocol (no PubAck wait), then waits for the server's PONG so every message has been
    read by the server."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.recv(4096)  # INFO
        out = [b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\n']
        for m in msgs:
            subject, headers, data = m if len(m) == 3 else (m[0], None, m[1])
            if headers is None:
                out.append(b"PUB %s %d\r\n%s\r\n" % (subject.encode(), len(data), data))
                continue
            head = b"NATS/1.0\r\n" + b"".join(b"%s: %s\r\n" % (k.encode(), v.encode()) for k, v in headers.items())
            head += b"\r\n"
            out.append(b"HPUB %s %d %d\r\n%s%s\r\n" % (subject.encode(), len(head), len(head) + len(data), head, data))
        out.append(b"PING\r\n")
        s.sendall(b"".join(out))
        buf = b""
        while b"PONG" not in buf:
            c = s.recv(4096)
            if not c:
                raise AssertionError("nats closed: %r" % buf)
            buf += c


def js_api(port, subject, request=None):
    """One JetStream API request (subject after $JS.API.) with the raw NATS protocol:
    its JSON answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        f = s.makefile("rb")
        f.readline()  # INFO
        body = json.dumps(request).encode() if request is not None else b""
        s.sendall(b'CONNECT {"verbose":false}\r\nSUB _INBOX.js 1\r\nPUB $JS.API.%s _INBOX.js %d\r\n%s\r\n'
                  % (subject.encode(), len(body), body))
        while True:
            line = f.readline()
            if not line:
                raise AssertionError("nats closed before answering $JS.API.%s" % subject)
            if line.startswith(b"MSG"):
                n = int(line.split()[-1])
                return json.loads(f.read(n + 2)[:n])
            if line.startswith(b"PING"):
                s.sendall(b"PONG\r\n")


class FarEnd:
    """A real HTTP/1.1 far end on a free loopback port (a thread per connection, kept
    alive), for the sinks' tests: it records every request as a FarEnd.Request (t: its
    monotonic time, method, path, headers: case-insensitive, body: bytes, status: what it
    was answered) and answers what answer(request) returns: a status, (status, body) or
    (status, body, {header: value}); 200 with no body by default. answer may sleep, and
    may raise (the connection is then dropped, unanswered). HTTPS with certs
    (make_certs); port: a given one (to come back on it after close)."""

    class Request:
        def __init__(self, method, path, headers, body):
            self.t = time.monotonic()
            self.method, self.path, self.headers, self.body = method, path, headers, body
            self.status = None

        def json(self):
            return json.loads(self.body)

    def __init__(self, answer=None, certs=None, port=0):
        import http.server
        import ssl
        import threading
        self.answer = answer or (lambda req: 200)
        self.lock = threading.Lock()
        self._requests = []
        far = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_any(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                req = FarEnd.Request(self.command, self.path, self.headers, body)
                with far.lock:
                    far._requests.append(req)
                out = far.answer(req)
                status, answer, headers = (out, b"", {}) if isinstance(out, int) else (tuple(out) + ({},))[:3]
                answer = answer.encode() if isinstance(answer, str) else answer
                req.status = status
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except OSError:
                    pass  # the client gave up on a slow answer and closed

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        if certs:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certs["cert"], certs["key"])
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.url = "%s://127.0.0.1:%d" % ("https" if certs else "http", self.port)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def requests(self):
        """The requests so far, oldest first (a copy)."""
        with self.lock:
            return list(self._requests)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class HttpSink(FarEnd):
    """A FarEnd answering `status` (a callable of the body for per-request control);
    received() is the bodies it answered 200."""

    def __init__(self, status=200):
        super().__init__(lambda req: status(req.body) if callable(status) else status)

    def received(self):
        return [r.body for r in self.requests() if r.status == 200]


class CountingSink:
    """bench/tools' C sink: counts unique ids (order_ref) and duplicates; GET /stats."""

    def __init__(self, tmp):
        self.proc = subprocess.Popen([os.path.join(BUILD, "bench", "gust-bench-sink"), "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=open(os.path.join(tmp.path, "sink.log"), "ab"))
        line = self.proc.stdout.readline().decode()
        assert line.startswith("port "), line
        self.port = int(line.split()[1])

    def stats(self):
        import json
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            c.request("GET", "/stats")
            return json.loads(c.getresponse().read())
        finally:
            c.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


class Nginx:
    """A real nginx (Debian's) in a temp prefix, on a free port, in the foreground;
    server_body is the inside of its server block. upstreams maps an upstream name to
    a loopback port. Stopped by PID."""

    def __init__(self, tmp, server_body, upstreams=None, extra_servers=()):
        self.port = free_port()
        self.prefix = os.path.join(tmp.path, "nginx-%d" % self.port)
        for d in ("logs", "tmp"):
            os.makedirs(os.path.join(self.prefix, d), exist_ok=True)
        ups = "".join("    upstream %s { server 127.0.0.1:%d; keepalive 8; }\n" % (name, port)
                      for name, port in (upstreams or {}).items())
        servers = [(self.port, server_body)]
        self.extra_ports = []
        for body in extra_servers:
            p = free_port()
            self.extra_ports.append(p)
            servers.append((p, body))
        conf = ["user root;", "worker_processes 1;", "pid %s/logs/nginx.pid;" % self.prefix,
                "error_log %s/logs/error.log info;" % self.prefix, "events { worker_connections 256; }",
                "http {", "    access_log %s/logs/access.log;" % self.prefix,
                "    client_body_temp_path %s/tmp/body;" % self.prefix,
                "    proxy_temp_path %s/tmp/proxy;" % self.prefix,
                "    fastcgi_temp_path %s/tmp/fastcgi;" % self.prefix,
                "    uwsgi_temp_path %s/tmp/uwsgi;" % self.prefix,
                "    scgi_temp_path %s/tmp/scgi;" % self.prefix, ups]
        for port, body in servers:
            conf.append("    server {\n        listen 127.0.0.1:%d;\n%s\n    }" % (port, body))
        conf.append("}")
        self.conf = os.path.join(self.prefix, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write("\n".join(conf) + "\n")
        test = subprocess.run(["nginx", "-t", "-p", self.prefix, "-c", self.conf], capture_output=True)
        if test.returncode != 0:
            raise AssertionError("nginx -t failed:\n%s\n%s" % (test.stderr.decode(), "\n".join(conf)))
        self.proc = subprocess.Popen(["nginx", "-p", self.prefix, "-c", self.conf, "-g", "daemon off;"],
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.prefix, "stderr.log"), "ab"))
        wait_for(lambda: port_open(self.port), 10, "nginx on %d" % self.port)

    def request(self, method, path, body=None, headers=None, timeout=10, port=None):
        c = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.read(), {k.lower(): v for k, v in r.getheaders()}
        finally:
            c.close()

    def error_log(self):
        with open(os.path.join(self.prefix, "logs", "error.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class Mosquitto:
    """A real mosquitto 2.0 broker on a free loopback port with a temp config and its
    persistence in a temp dir. Anonymous clients are allowed unless users is given
    ({name: password}, written with mosquitto_passwd). It runs as root (`user root`),
    with Nagle off, unlimited queues for offline persistent sessions (the default 1000
    would drop QoS 1 messages while gust is down) and `inflight` QoS 1 messages in
    flight per client; tls=(ca, cert, key) makes it a TLS listener. stop() is a clean
    shutdown (the store is saved); start() again reuses port and store."""

    def __init__(self, tmp, users=None, inflight=100, port=None, tls=None):
        self.port = port or free_port()
        self.dir = os.path.join(tmp.path, "mosquitto-%d" % self.port)
        os.makedirs(self.dir, exist_ok=True)
        conf = ["listener %d 127.0.0.1" % self.port, "persistence true",
                "persistence_location %s/" % self.dir, "user root", "set_tcp_nodelay true",
                "max_queued_messages 0", "max_inflight_messages %d" % inflight]
        if users:
            pwfile = os.path.join(self.dir, "passwd")
            open(pwfile, "w").close()
            for name, password in users.items():
                subprocess.run(["mosquitto_passwd", "-b", pwfile, name, password], check=True)
            conf += ["allow_anonymous false", "password_file %s" % pwfile]
        else:
            conf.append("allow_anonymous true")
        if tls:  # (ca, cert, key) files: the listener speaks TLS only
            conf += ["cafile %s" % tls[0], "certfile %s" % tls[1], "keyfile %s" % tls[2]]
        self.conf = os.path.join(self.dir, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write("\n".join(conf) + "\n")
        self.log = open(os.path.join(self.dir, "mosquitto.log"), "ab")
        self.proc = None
        self.start()

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def start(self):
        self.proc = subprocess.Popen(["mosquitto", "-c", self.conf], stdout=self.log, stderr=self.log)
        wait_for(lambda: port_open(self.port), 10, "mosquitto on %d" % self.port)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None


def make_certs(tmp, name="tls"):
    """A test CA, a server certificate it signs (localhost and 127.0.0.1), a client
    certificate it signs, and another CA that signed neither, made with openssl(1) in
    tmp/<name>. Returns a dict of their paths: ca, cert, key, client_cert, client_key,
    other_ca."""
    d = os.path.join(tmp.path, name)
    os.makedirs(d, exist_ok=True)

    def ssl(*args):
        subprocess.run(["openssl"] + list(args), check=True, capture_output=True, cwd=d)

    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=gust test CA")
    for who, cn, ext in (("server", "localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
                         ("client", "gust", "extendedKeyUsage=clientAuth")):
        ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", who + ".key", "-out", who + ".csr",
            "-subj", "/CN=" + cn, "-addext", ext)
        ssl("x509", "-req", "-in", who + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", who + ".crt", "-days", "2", "-copy_extensions", "copy")
    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out", "other.crt", "-days", "2",
        "-subj", "/CN=another CA")
    p = lambda f: os.path.join(d, f)  # noqa: E731
    return {"ca": p("ca.crt"), "cert": p("server.crt"), "key": p("server.key"), "client_cert": p("client.crt"),
            "client_key": p("client.key"), "other_ca": p("other.crt")}


class RabbitMQ:
    """A real rabbitmq-server (Debian's package) on free loopback ports, everything of it
    in a temp dir owned by the `rabbitmq` user and run as that user: its own node name,
    AMQP port, distribution port and epmd port, so tests never meet another broker.
    Slow to start (seconds): start one per test file. stop() is a clean `rabbitmqctl
    stop` (durable queues and persistent messages stay for the next start()); close()
    also ends the epmd it started. tls: make_certs()'s dict, for a TLS listener on
    tls_port too (the server's certificate names localhost and 127.0.0.1); max_message_size:
    the broker refuses (406) larger messages."""

    BIN = "/usr/lib/rabbitmq/bin"

    def __init__(self, tmp, tls=None, max_message_size=None):
        self.port = free_port()
        self.tls_port = free_port() if tls else None
        self.dist_port = free_port()
        self.epmd_port = free_port()
        self.node = "gust%d@localhost" % self.port
        self.dir = os.path.join(tmp.path, "rabbitmq-%d" % self.port)
        os.makedirs(os.path.join(self.dir, "mnesia"))
        os.makedirs(os.path.join(self.dir, "log"))
        with open(os.path.join(self.dir, "rabbitmq.conf"), "w") as f:
            f.write("listeners.tcp.1 = 127.0.0.1:%d\n" % self.port
                    + "disk_free_limit.absolute = 10MB\n"
                    + "log.console = false\nlog.file.level = info\n")
            if max_message_size:
                f.write("max_message_size = %d\n" % max_message_size)
            if tls:
                for name in ("ca", "cert", "key"):
                    shutil.copy(tls[name], os.path.join(self.dir, name + ".pem"))
                f.write("listeners.ssl.1 = 127.0.0.1:%d\n" % self.tls_port
                        + "ssl_options.cacertfile = %s/ca.pem\n" % self.dir
                        + "ssl_options.certfile = %s/cert.pem\n" % self.dir
                        + "ssl_options.keyfile = %s/key.pem\n" % self.dir
                        + "ssl_options.verify = verify_none\nssl_options.fail_if_no_peer_cert = false\n")
        with open(os.path.join(self.dir, "enabled_plugins"), "w") as f:
            f.write("[].\n")
        subprocess.run(["chown", "-R", "rabbitmq:rabbitmq", self.dir], check=True)
        os.chmod(tmp.path, 0o755)
        self.env = dict(os.environ, HOME=self.dir, RABBITMQ_NODENAME=self.node,
                        RABBITMQ_NODE_IP_ADDRESS="127.0.0.1", RABBITMQ_NODE_PORT=str(self.port),
                        RABBITMQ_DIST_PORT=str(self.dist_port), ERL_EPMD_PORT=str(self.epmd_port),
                        ERL_EPMD_ADDRESS="127.0.0.1",
                        RABBITMQ_MNESIA_BASE=os.path.join(self.dir, "mnesia"),
                        RABBITMQ_LOG_BASE=os.path.join(self.dir, "log"),
                        RABBITMQ_CONFIG_FILE=os.path.join(self.dir, "rabbitmq.conf"),
                        RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(self.dir, "enabled_plugins"),
                        RABBITMQ_PID_FILE=os.path.join(self.dir, "pid"))
        self.log = open(os.path.join(self.dir, "stdout.log"), "ab")
        self.proc = None
        self.start()

    @property
    def url(self):
        return "amqp://guest:guest@127.0.0.1:%d/%%2f" % self.port

    def _as_rabbitmq(self, *cmd):
        return ["setpriv", "--reuid=rabbitmq", "--regid=rabbitmq", "--init-groups"] + list(cmd)

    def start(self):
        # The distribution port was free when picked, but nothing holds it: a test running
        # beside this one may listen there first (CI once saw dist_port_already_used). The
        # broker then stops at once, and starts again on another port.
        for attempt in range(3):
            since = os.path.getsize(self.log.name)
            self.proc = subprocess.Popen(self._as_rabbitmq(os.path.join(self.BIN, "rabbitmq-server")), env=self.env,
                                         stdout=self.log, stderr=self.log, cwd=self.dir)
            deadline = time.monotonic() + 120
            while not port_open(self.port):
                if self.proc.poll() is not None and attempt < 2 and b"dist_port_already_used" in self._stdout(since):
                    self.dist_port = free_port()
                    self.env["RABBITMQ_DIST_PORT"] = str(self.dist_port)
                    break
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("rabbitmq-server on %d did not start; its log:\n%s" % (self.port,
                                                                                              self.logs()[-3000:]))
                time.sleep(0.2)
            else:
                return

    def _stdout(self, since):
        with open(self.log.name, "rb") as f:
            f.seek(since)
            return f.read()

    def ctl(self, *args, timeout=60):
        return subprocess.run(self._as_rabbitmq(os.path.join(self.BIN, "rabbitmqctl"), "-n", self.node, *args),
                              env=self.env, capture_output=True, text=True, timeout=timeout, cwd=self.dir)

    def logs(self):
        out = []
        for d in (self.dir, os.path.join(self.dir, "log")):
            for name in sorted(os.listdir(d)):
                if name.endswith(".log"):
                    with open(os.path.join(d, name), errors="replace") as f:
                        out.append(f.read())
        return "\n".join(out)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.ctl("stop")
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def close(self):
        self.stop()
        subprocess.run(["epmd", "-port", str(self.epmd_port), "-kill"], env=self.env, capture_output=True)


class Redis:
    """A real redis-server on a free loopback port, its dir in the temp dir, no saving
    but on SHUTDOWN SAVE (so a restart keeps the streams)."""

    def __init__(self, tmp):
        self.port = free_port()
        self.dir = os.path.join(tmp.path, "redis-%d" % self.port)
        os.makedirs(self.dir)
        self.log = open(os.path.join(self.dir, "log"), "ab")
        self.proc = None
        self.start()

    @property
    def url(self):
        return "redis://127.0.0.1:%d" % self.port

    def start(self):
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
                                      self.dir, "--save", "", "--appendonly", "no"], stdout=self.log,
                                     stderr=self.log)
        wait_for(lambda: port_open(self.port), 10, "redis-server on %d" % self.port)
        wait_for(lambda: self.try_ping(), 10, "redis-server loaded")

    def try_ping(self):
        try:
            return self.cmd("PING") == "PONG"
        except (OSError, RuntimeError):
            return False

    def stop(self):
        """SHUTDOWN SAVE: the streams are on disk for the next start."""
        if self.proc and self.proc.poll() is None:
            try:
                self.cmd("SHUTDOWN", "SAVE")
            except (OSError, RuntimeError):
                pass
            self.proc.wait(10)
        self.proc = None

    def cmd(self, *args):
        return self.pipeline([args])[0]

    def pipeline(self, cmds):
        """Sends every command, then reads every reply (RESP2)."""
        out = bytearray()
        for args in cmds:
            out += b"*%d\r\n" % len(args)
            for a in args:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(out)
            f = s.makefile("rb")
            return [self._reply(f) for _ in cmds]

    def _reply(self, f):
        line = f.readline()
        if not line:
            raise OSError("connection closed")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = f.read(n + 2)[:-2]
            return data.decode(errors="replace")
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply(f) for _ in range(n)]
        raise OSError("bad reply %r" % line)

    def xadd_many(self, stream, start, n, field="data"):
        cmds = [("XADD", stream, "*", field, json.dumps({"id": i, "v": i * 7})) for i in range(start, start + n)]
        for i in range(0, len(cmds), 500):
            for r in self.pipeline(cmds[i:i + 500]):
                assert not isinstance(r, Exception), r

    def ids(self, stream, field="data"):
        """[id] of every entry's JSON in `field`."""
        out = []
        for _, fields in self.cmd("XRANGE", stream, "-", "+") or []:
            kv = dict(zip(fields[0::2], fields[1::2]))
            out.append(json.loads(kv[field])["id"])
        return out


class KafkaMock:
    """gust-kafka-mock: one broker on a loopback port, the given topics (name:partitions)."""

    def __init__(self, tmp, *topics):
        self.log = open(os.path.join(tmp.path, "kafka-mock.log"), "ab")
        self.proc = subprocess.Popen([KAFKA_MOCK] + list(topics), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("bootstrap "), line
        self.bootstrap = line.split()[1]

    def cmd(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        assert answer == "ok", (line, answer)

    def produce(self, topic, msgs, headers=()):
        """msgs: [(key, value)], value one line each."""
        args = ["kcat", "-P", "-b", self.bootstrap, "-t", topic, "-K", "\\t"]
        for h in headers:
            args += ["-H", h]
        data = "".join("%s\t%s\n" % (k, v) for k, v in msgs)
        subprocess.run(args, input=data, text=True, check=True, timeout=60, capture_output=True)

    def consume(self, topic, fmt="%s\\n"):
        """Every message of topic now, formatted by kcat -f."""
        p = subprocess.run(["kcat", "-C", "-b", self.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-f", fmt],
                           capture_output=True, text=True, timeout=60)
        return p.stdout

    def ids(self, topic):
        return [json.loads(line)["id"] for line in self.consume(topic).splitlines() if line.strip()]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
