#!/usr/bin/env python3
"""A hostile HTTP/1.1 server for http_out's tests: it answers each request with the
status its JSON body asks for ({"status": 503}, default 200), and puts an extra,
unasked-for "200 OK" before the answer of each request that asks for one ({"extra":
true}), for the first --extras answers it sends (default: all). The answers to the
requests read together go out together, in one write, so a pipelined batch meets them
in one read.

With --first-twice it is the far end of issue 27 item 8 instead: it answers the first
request of each connection twice (200, then 200 again) and every later one 503, each
answer in its own write as it reads the request, and GET /log answers {"accepted": [the
"n" of each request it really answered 200]}. Prints "port N" first."""
import argparse
import json
import socket
import threading

ap = argparse.ArgumentParser()
ap.add_argument("--extras", type=int, default=1 << 30)
ap.add_argument("--first-twice", action="store_true")
args = ap.parse_args()
lock = threading.Lock()
extras_left = [args.extras]
accepted = []
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"


def answer(status):
    body = b"" if status < 300 else b"no\n"
    return b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n%s" % (status, len(body), body)


def first_twice(conn, head, body, served):
    """One request of --first-twice; False when the connection is gone."""
    if head.startswith(b"GET "):
        with lock:
            log = json.dumps({"accepted": accepted}).encode()
        out = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(log), log)
        served = -1  # not a delivery: no double answer
    elif served == 0:
        with lock:
            accepted.append(json.loads(body)["n"])
        out = OK
    else:
        out = answer(503)
    try:
        conn.sendall(out)
        if served == 0:
            conn.sendall(OK)
    except OSError:
        return False
    return True


def serve(conn):
    buf = b""
    served = 0
    with conn:
        while True:
            try:
                data = conn.recv(1 << 20)
            except OSError:
                return
            if not data:
                return
            buf += data
            out = b""
            while True:
                head, sep, rest = buf.partition(b"\r\n\r\n")
                if not sep:
                    break
                n = 0
                for line in head.split(b"\r\n")[1:]:
                    if line.lower().startswith(b"content-length:"):
                        n = int(line.split(b":")[1])
                if len(rest) < n:
                    break
                body, buf = rest[:n], rest[n:]
                if args.first_twice:
                    if not first_twice(conn, head, body, served):
                        return
                    served += 1
                    continue
                try:
                    ask = json.loads(body)
                except ValueError:
                    ask = {}
                with lock:
                    extra = ask.get("extra") and extras_left[0] > 0
                    extras_left[0] -= 1 if extra else 0
                out += (OK if extra else b"") + answer(int(ask.get("status", 200)))
            if out:
                conn.sendall(out)


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(64)
print("port %d" % srv.getsockname()[1], flush=True)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
