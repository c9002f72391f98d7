#!/usr/bin/env python3
"""An HTTP/1.1 server that answers what each request body asks for, for http_out's tests.

A POST or PUT body is JSON: {"status": 503} makes the answer 503 (default 200), and
{"slow": true} holds the answer until the server stops, so the client times out. A
non-2xx answer carries a body longer than the plugin keeps, to check it is cut.
Every request is logged (method, content type, X-Test header, body) and GET /log returns
the log as JSON, with the number of connections accepted. Prints "port N" first.
"""
import http.server
import json
import socketserver
import sys
import threading

lock = threading.Lock()
log = []
connections = 0
stopping = threading.Event()
REFUSAL = "refused\n" + "x" * 200


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def setup(self):
        global connections
        with lock:
            connections += 1
        super().setup()

    def log_message(self, *args):
        pass

    def answer(self, status, body, ctype="text/plain"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        with lock:
            log.append({"method": self.command, "type": self.headers.get("Content-Type"),
                        "x_test": self.headers.get("X-Test"), "body": body})
        try:
            ask = json.loads(body) if body else {}
        except ValueError:
            ask = {}
        if ask.get("slow"):
            stopping.wait(60)
        status = int(ask.get("status", 200))
        self.answer(status, "" if status < 300 else REFUSAL)

    do_PUT = do_POST

    def do_GET(self):
        with lock:
            state = json.dumps({"connections": connections, "log": log})
        self.answer(200, state, "application/json")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 256


server = Server(("127.0.0.1", 0), Handler)
print("port %d" % server.server_address[1], flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    pass
sys.exit(0)
