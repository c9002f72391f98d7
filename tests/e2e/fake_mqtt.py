"""A fake MQTT 3.1.1 broker for the tests of hostile and broken brokers: it speaks just
enough of the protocol to get a client to a given point, then misbehaves as a script
says. Each accepted connection runs `script(conn)` on a thread of its own; conn reads
and writes whole packets and records what the client sent."""
import socket
import struct
import threading
import time

CONNECT, CONNACK, PUBLISH, PUBACK, PUBREC, PUBREL, PUBCOMP = 1, 2, 3, 4, 5, 6, 7
SUBSCRIBE, SUBACK, PINGREQ, PINGRESP, DISCONNECT = 8, 9, 12, 13, 14


def remaining(n):
    out = b""
    while True:
        d, n = n % 128, n // 128
        out += bytes([d | (0x80 if n else 0)])
        if not n:
            return out


def packet(ptype, body=b"", flags=0):
    return bytes([ptype << 4 | flags]) + remaining(len(body)) + body


def publish(topic, payload, qos=0, pid=0, dup=False):
    t = topic.encode()
    body = struct.pack("!H", len(t)) + t + (struct.pack("!H", pid) if qos else b"") + payload
    return packet(PUBLISH, body, (qos << 1) | (8 if dup else 0))


class Conn:
    def __init__(self, broker, sock):
        self.broker = broker
        self.sock = sock
        self.buf = b""
        self.packets = []  # (type, flags, body) the client sent, in order

    def send(self, data):
        self.sock.sendall(data)

    def read(self, timeout=10):
        """The next packet from the client as (type, flags, body), or None when it closed."""
        self.sock.settimeout(timeout)
        while True:
            if len(self.buf) >= 2:
                n, mult, i = 0, 1, 1
                while i < len(self.buf) and i <= 4:
                    n += (self.buf[i] & 0x7f) * mult
                    mult *= 128
                    if not self.buf[i] & 0x80:
                        break
                    i += 1
                if i < len(self.buf) and len(self.buf) >= i + 1 + n:
                    p = (self.buf[0] >> 4, self.buf[0] & 0xf, self.buf[i + 1:i + 1 + n])
                    self.buf = self.buf[i + 1 + n:]
                    self.packets.append(p)
                    with self.broker.lock:
                        self.broker.received.append(p)
                    return p
            try:
                data = self.sock.recv(65536)
            except (socket.timeout, OSError):
                return None
            if not data:
                return None
            self.buf += data

    def read_until(self, ptype, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            p = self.read(max(0.01, deadline - time.monotonic()))
            if p is None:
                return None
            if p[0] == ptype:
                return p
        return None

    def accept_connect(self, session_present=0):
        """Reads CONNECT, answers CONNACK (accepted)."""
        p = self.read()
        assert p is not None and p[0] == CONNECT, p
        self.send(packet(CONNACK, bytes([session_present, 0])))

    def accept_subscribe(self, codes=None):
        """Reads SUBSCRIBE, answers SUBACK with the given return codes (default: what was
        asked for). Returns the packet id."""
        p = self.read_until(SUBSCRIBE)
        assert p is not None, "no SUBSCRIBE"
        pid = struct.unpack("!H", p[2][:2])[0]
        asked, i = [], 2
        while i < len(p[2]):
            n = struct.unpack("!H", p[2][i:i + 2])[0]
            asked.append(p[2][i + 2 + n])
            i += 3 + n
        self.send(packet(SUBACK, struct.pack("!H", pid) + bytes(codes if codes is not None else asked)))
        return pid


class FakeBroker:
    def __init__(self, script):
        self.script = script
        self.lock = threading.Lock()
        self.connections = 0
        self.connected_at = []
        self.received = []
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.port = self.srv.getsockname()[1]
        self.stopping = False
        threading.Thread(target=self.accept_loop, daemon=True).start()

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def accept_loop(self):
        while not self.stopping:
            try:
                s, _ = self.srv.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                self.connected_at.append(time.monotonic())
            threading.Thread(target=self.run, args=(s,), daemon=True).start()

    def run(self, s):
        c = Conn(self, s)
        try:
            self.script(c)
        except (OSError, AssertionError):
            pass
        finally:
            try:
                s.close()
            except OSError:
                pass

    def types_received(self):
        with self.lock:
            return [p[0] for p in self.received]

    def stop(self):
        self.stopping = True
        self.srv.close()
