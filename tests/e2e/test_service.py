"""Running under systemd: gust speaks sd_notify (READY=1 once serving, RELOADING=1 and
READY=1 around a SIGHUP reload, STOPPING=1 at shutdown) to $NOTIFY_SOCKET, and when its
stderr is the journal ($JOURNAL_STREAM names it) each log line starts with a syslog
priority and carries no timestamp of its own."""
import os
import re
import signal
import socket

from gustlib import Checks, Gust, NatsServer, TempDir, free_port, wait_for

CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; }
"""


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    sock_path = os.path.join(tmp.path, "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(10)
    got = []

    def next_message():
        got.append(sock.recv(4096).decode())
        return got[-1]

    g = Gust(tmp, CONF % nats.url, wait_healthy=False, env={"NOTIFY_SOCKET": sock_path})
    try:
        t.check(next_message().startswith("READY=1"), "READY=1 once serving: %r" % got)
        wait_for(g.healthy, 10, "/healthz 200 (ingest's own connection comes up just after)")
        g.proc.send_signal(signal.SIGHUP)
        msg = next_message()
        t.check(re.match(r"RELOADING=1\nMONOTONIC_USEC=\d+$", msg) is not None, "RELOADING=1 at SIGHUP: %r" % msg)
        t.eq(next_message(), "READY=1", "READY=1 after the reload")
        g.proc.send_signal(signal.SIGTERM)
        t.eq(next_message(), "STOPPING=1", "STOPPING=1 at SIGTERM")
        t.eq(g.proc.wait(10), 0, "clean stop")
        t.check(re.search(r"^\d{4}-\d\d-\d\dT[\d:.]+Z \[info\] gust .* running", g.log(), re.M) is not None,
                "outside the journal: a timestamp and the level")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()

    # stderr is "the journal": JOURNAL_STREAM is "device:inode" of the stream systemd
    # connected to stderr, here the log file Gust() appends to (tmp/gust-PORT.log).
    port = free_port()
    log = os.path.join(tmp.path, "gust-%d.log" % port)
    open(log, "w").close()
    st = os.stat(log)
    g = Gust(tmp, CONF % nats.url, port=port, env={"JOURNAL_STREAM": "%d:%d" % (st.st_dev, st.st_ino)})
    try:
        g.stop()
        lines = [ln for ln in g.log().splitlines() if ln]
        t.check(lines and all(re.match(r"<[3467]>\[(error|warn|info|debug)\] ", ln) for ln in lines),
                "every line starts with its priority and level: %r" % lines[:3])
        t.check("<6>[info] gust " in g.log() and not re.search(r"\d{4}-\d\d-\d\dT", g.log()),
                "no timestamp of its own")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        nats.stop()
        sock.close()
        if t.failed:
            print(g.log()[-2000:])
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
