#!/usr/bin/env python3
"""An HTTP/1.1 server that answers what each request body asks for, for http_out's tests.

A POST or PUT body is JSON: {"status": 503} makes the answer 503 (default 200), and
{"slow": true} holds the answer until the server stops, so the client times out. A
non-2xx answer carries a body longer than the plugin keeps, to check it is cut.
{"chunked": true} sends the answer chunked (with an extension and a trailer), {"interim":
true} sends a "100 Continue" first, {"close": true} answers with "Connection: close" and
closes, {"malformed": true} answers with a broken status line.
Every request is logged (method, content type, X-Test header, body) and GET /log returns
the log as JSON, with the number of connections accepted. Prints "port N" first.

Options: --http10 answers as HTTP/1.0 without keep-alive (closing after every answer);
--idle-timeout S closes a kept-alive connection idle for S seconds; --max-requests N
answers the Nth request of a connection with "Connection: close" (nginx's
keepalive_requests); --tls CERT KEY serves https.
"""
import argparse
import http.server
import json
import socketserver
import ssl
import sys
import threading

ap = argparse.ArgumentParser()
ap.add_argument("--http10", action="store_true")
ap.add_argument("--idle-timeout", type=float)
ap.add_argument("--max-requests", type=int)
ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
args = ap.parse_args()

lock = threading.Lock()
log = []
connections = 0
stopping = threading.Event()
REFUSAL = "refused\n" + "x" * 200


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0" if args.http10 else "HTTP/1.1"  # 1.1: keep-alive
    timeout = args.idle_timeout  # a read waiting longer ends the connection

    def setup(self):
        global connections
        with lock:
            connections += 1
        self.served = 0
        super().setup()

    def log_message(self, *args):
        pass

    def answer(self, status, body, ctype="text/plain", ask={}):
        data = body.encode()
        if ask.get("malformed"):
            self.wfile.write(b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n")
            self.close_connection = True
            return
        if ask.get("interim"):
            self.wfile.write(b"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n")
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if ask.get("close"):
            self.send_header("Connection", "close")
            self.close_connection = True
        if not ask.get("chunked"):
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        out = b""
        for i in range(0, len(data), 7):
            piece = data[i:i + 7]
            out += b"%x;ext=1\r\n%s\r\n" % (len(piece), piece)
        self.wfile.write(out + b"0\r\nX-Trailer: t\r\n\r\n")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        with lock:
            log.append({"method": self.command, "type": self.headers.get("Content-Type"),
                        "x_test": self.headers.get("X-Test"), "body": body})
        try:
            ask = json.loads(body) if body else {}
        except ValueError:
            ask = {}
        self.served += 1
        if args.max_requests and self.served >= args.max_requests:
            ask["close"] = True
        if ask.get("slow"):
            stopping.wait(60)
        status = int(ask.get("status", 200))
        self.answer(status, "" if status < 300 else REFUSAL, ask=ask)

    do_PUT = do_POST

    def do_GET(self):
        with lock:
            state = json.dumps({"connections": connections, "log": log})
        self.answer(200, state, "application/json")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 256


server = Server(("127.0.0.1", 0), Handler)
if args.tls:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.tls[0], args.tls[1])
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
print("port %d" % server.server_address[1], flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    pass
sys.exit(0)
