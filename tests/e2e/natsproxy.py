"""A hostile NATS peer for the tests: a proxy in front of a real nats-server that passes
everything through until told to misbehave towards one connection (found by the name
in its CONNECT, e.g. gust's "gust-ingest") or towards every new connection. What it can
do, each a defect a broken or hostile server showed (issue 17):

- rewrite the INFO of new connections (a huge max_payload);
- rewrite the MSG frames a connection gets (a byte count too large, a PubAck that does
  not parse, a byte count that overflows);
- freeze a connection: it stays open and nothing more passes either way (half-open);
- flood a connection with PINGs while reading nothing from it;
- accept new connections and close them at once, before or after the handshake.

It counts the connections it accepted. Every socket is closed by close()."""
import re
import socket
import threading
import time


class Conn:
    def __init__(self, proxy, client):
        self.proxy = proxy
        self.client = client
        self.server = None
        self.name = None
        self.frozen = False
        self.flood = False
        self.closed = False
        self.lock = threading.Lock()

    def close(self):
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for s in (self.client, self.server):
            if s is not None:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()


class NatsProxy:
    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.conns = []
        self.accepted = 0
        self.lock = threading.Lock()
        # Behaviour of new connections: None (pass through), "close" (accept and close at
        # once), "close_after_handshake" (close once the handshake's PONG went through).
        self.new_conns = None
        self.info_rewrite = None  # fn(info_line) -> line, for new connections
        self.pong_rewrite = None  # fn(the handshake's PONG frame) -> bytes, for new connections
        self.msg_rewrite = {}     # connection name -> fn(frame bytes) -> bytes
        self.running = True
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return "nats://127.0.0.1:%d" % self.port

    def named(self, name):
        with self.lock:
            return [c for c in self.conns if c.name == name and not c.closed]

    def kick(self, name):
        """Closes the connections with that name (the client reconnects)."""
        for c in self.named(name):
            c.close()

    def freeze(self, name, on=True):
        for c in self.named(name):
            c.frozen = on

    def ping_flood(self, name):
        for c in self.named(name):
            c.flood = True
            threading.Thread(target=self._flood, args=(c,), daemon=True).start()

    def close(self):
        self.running = False
        self.listener.close()
        with self.lock:
            conns = list(self.conns)
        for c in conns:
            c.close()

    # ---- internals ----

    def _accept(self):
        while self.running:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
                mode = self.new_conns
            if mode == "close":
                client.close()
                continue
            c = Conn(self, client)
            try:
                c.server = socket.create_connection(("127.0.0.1", self.upstream), timeout=5)
                c.server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns.append(c)
            info_rewrite = self.info_rewrite
            pong_rewrite = self.pong_rewrite
            threading.Thread(target=self._client_to_server, args=(c,), daemon=True).start()
            threading.Thread(target=self._server_to_client, args=(c, info_rewrite, mode, pong_rewrite),
                             daemon=True).start()

    def _client_to_server(self, c):
        buf = b""
        try:
            while not c.closed:
                if c.flood:
                    time.sleep(0.05)  # reads nothing: what the client writes piles up
                    continue
                data = c.client.recv(65536)
                if not data:
                    break
                if c.name is None:
                    buf += data
                    m = re.search(rb'CONNECT \{.*?"name":"([^"]*)"', buf)
                    if m:
                        c.name = m.group(1).decode()
                while c.frozen and not c.closed:
                    time.sleep(0.05)
                c.server.sendall(data)
        except OSError:
            pass
        if not c.frozen:
            c.close()

    def _send(self, c, data):
        while c.frozen and not c.closed:
            time.sleep(0.05)
        if not c.flood:  # the flood thread owns the socket
            c.client.sendall(data)

    def _server_to_client(self, c, info_rewrite, mode, pong_rewrite=None):
        buf = b""
        first = True
        try:
            while not c.closed:
                data = c.server.recv(65536)
                if not data:
                    break
                buf += data
                while True:
                    nl = buf.find(b"\r\n")
                    if nl < 0:
                        break
                    line = buf[:nl + 2]
                    frame = line
                    if line.startswith(b"MSG ") or line.startswith(b"HMSG "):
                        size = int(line.split()[-1])
                        if len(buf) < nl + 2 + size + 2:
                            break
                        frame = buf[:nl + 2 + size + 2]
                    buf = buf[len(frame):]
                    if first and frame.startswith(b"INFO ") and info_rewrite is not None:
                        frame = info_rewrite(frame)
                    first = False
                    if pong_rewrite is not None and frame.startswith(b"PONG"):
                        frame, pong_rewrite = pong_rewrite(frame), None
                    fn = self.msg_rewrite.get(c.name)
                    if fn is not None and frame.startswith(b"MSG "):
                        frame = fn(frame)
                    self._send(c, frame)
                    if mode == "close_after_handshake" and frame.startswith(b"PONG"):
                        c.close()
                        return
        except OSError:
            pass
        if not c.frozen:
            c.close()

    def _flood(self, c):
        burst = b"PING\r\n" * 10000
        try:
            while c.flood and not c.closed:
                c.client.sendall(burst)
        except OSError:
            pass
