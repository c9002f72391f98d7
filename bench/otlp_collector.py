"""A minimal OTLP/HTTP JSON collector for bench/otlp.sh: answers 200 to every POST and
counts the spans it got (spanId keys), which GET /count returns. Started as
`otlp_collector.py PORT`."""
import http.server
import sys
import threading

spans = 0
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        global spans
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:
            spans += body.count(b'"spanId"')
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        with lock:
            out = str(spans).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
server.daemon_threads = True
server.serve_forever()
