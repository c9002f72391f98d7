"""The exec plugin with real child processes (small scripts in a temp dir), a real
nats-server and gust: exec_source publishes each JSON line and skips and counts the rest,
survives a failing, a hanging and a missing command; exec_stream is restarted after it
exits and its back-pressure loses no line of 20000; exec_sink delivers every message once
and dead-letters a failing command's message with its stderr; a secret given by file
reaches the child's environment but never its argv or gust's log; the child inherits no
descriptor of gust; a reload stops and restarts the children; bad configs are refused by
`gust -t` with file:line."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

from gustlib import BUILD, GUST, Checks, Gust, NatsServer, TempDir, children_of, free_port, nats_publish, wait_for

PLUGINS = os.path.join(BUILD, "plugins")
PY = sys.executable
SECRET = "s3cr3t-Zq9-never-logged"

# exec_source: good lines, a line that is not JSON, a JSON array, a line over max_line
# (256 here), and a last line without a newline. Counts its runs in a file.
SRC = r"""
import os, sys
d = sys.argv[1]
with open(os.path.join(d, "src.runs"), "a") as f:
    f.write("x")
run = os.path.getsize(os.path.join(d, "src.runs"))
out = sys.stdout
out.write('{"run": %d, "i": 1}\n' % run)
out.write('this is not json\n')
out.write('\n')
out.write('[1, 2, 3]\n')
out.write('{"run": %d, "i": 2, "pad": "%s"}\n' % (run, "y" * 1000))
out.write('{"run": %d, "i": 3}\r\n' % run)
out.write('{"run": %d, "i": 4}' % run)
"""

# Fails: one good line, a message on stderr, exit 3.
FAIL = """#!/bin/sh
echo '{"failing": true}'
echo "disk on fire" >&2
exit 3
"""

# Hangs: a grandchild in the same process group, both killed by the timeout.
HANG = """#!/bin/sh
sleep 300 &
echo $! > "$1/hang.grandchild"
echo '{"hang": 1}'
sleep 300
"""

# Reports its environment, argv and descriptors (never the secret itself: its hash).
SECRET_PY = r"""
import hashlib, json, os, sys
tok = os.environ.get("API_TOKEN", "")
cmdline = open("/proc/self/cmdline", "rb").read()
fds = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        fds[fd] = os.readlink("/proc/self/fd/" + fd)
    except OSError:
        pass
print(json.dumps({
    "token_sha": hashlib.sha256(tok.encode()).hexdigest(),
    "secret_in_cmdline": tok.encode() in cmdline if tok else None,
    "argv": sys.argv[1:],
    "from_env": os.environ.get("FROM_PARENT"),
    "plain": os.environ.get("PLAIN"),
    "private_seen": "GUST_TEST_PRIVATE" in os.environ,
    "fds": fds,
    "pgid_is_pid": os.getpgid(0) == os.getpid(),
}))
"""

# exec_stream: runs 1 and 2 print 5 lines and exit 2; run 3 prints 20000 lines with unique
# ids (and one bad line) as fast as it can, then stays up (its pid in a file).
STREAM = r"""
import os, sys, time
d = sys.argv[1]
with open(os.path.join(d, "stream.runs"), "a") as f:
    f.write("x")
run = os.path.getsize(os.path.join(d, "stream.runs"))
out = sys.stdout
if run < 3:
    for i in range(5):
        out.write('{"run": %d, "i": %d}\n' % (run, i))
    out.flush()
    sys.exit(2)
with open(os.path.join(d, "stream.pid.tmp"), "w") as f:
    f.write(str(os.getpid()))
os.rename(os.path.join(d, "stream.pid.tmp"), os.path.join(d, "stream.pid"))
for i in range(20000):
    if i == 777:
        out.write("garbage in the stream\n")
    out.write('{"run": %d, "id": %d}\n' % (run, i))
out.flush()
with open(os.path.join(d, "stream.done"), "w") as f:
    f.write("1")
time.sleep(600)
"""

# exec_sink: records each call (attempt, subject, body) and fails bodies with "fail": true.
SINK = """#!/bin/sh
body=$(cat)
printf '%s %s %s\\n' "$GUST_ATTEMPT" "$GUST_SUBJECT" "$body" >> "$1/$2"
case "$body" in
*'"fail": true'*) echo "some noise" >&2; echo "cannot process $body" >&2; exit 4;;
esac
"""

CONF = """
plugin_dir %(plugins)s;
plugin exec;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_deliver 3; retry_delay 50ms; retry_max_delay 200ms; }
source good { use exec_source; command %(py)s %(d)s/src.py %(d)s; interval 1s; subject ev.src; max_line 256; }
source failing { use exec_source; command %(d)s/fail.sh; interval 1s; subject ev.failing; }
source missing { use exec_source; command %(d)s/no-such-tool --flag; interval 1s; subject ev.missing; }
source hang { use exec_source; command /bin/sh %(d)s/hang.sh %(d)s; interval 1h; timeout 2s; subject ev.hang; }
source secret {
    use exec_source;
    command %(py)s %(d)s/secret.py --mode "two words";
    interval 1h;
    subject ev.secret;
    env_file API_TOKEN=token.txt;
    env_from FROM_PARENT=GUST_TEST_FROM;
    env PLAIN=visible;
}
source stream { use exec_stream; command %(py)s %(d)s/stream.py %(d)s; subject ev.stream;
                restart_min 100ms; restart_max 30s; max_inflight 64; }
sink run { use exec_sink; source ev.sinkin; command /bin/sh %(d)s/sink.sh %(d)s calls.txt; timeout 20s; }
sink nocmd { use exec_sink; source ev.nocmd; command %(d)s/no-such-sink; }
sink slow { use exec_sink; source ev.slow; command /bin/sleep 30; timeout 300ms; }
sink par { use exec_sink; source ev.parin; command /bin/sh %(d)s/sink.sh %(d)s par.txt; max_inflight 4; timeout 20s; }
"""


def msgs(nats, subject):
    return [json.loads(d) for _, s, d in nats.read_stream() if s == subject]


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def zombies_of(pid):
    """Zombie children of pid that stay so for a second (one between a child's exit and its
    reaping is normal)."""
    first = set(zombies_now(pid))
    if not first:
        return []
    time.sleep(1)
    return sorted(first & set(zombies_now(pid)))


def zombies_now(pid):
    out = []
    for k in children_of(pid):
        try:
            with open("/proc/%d/stat" % k) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    out.append(k)
        except OSError:
            pass
    return out


def calls_of(path):
    """The sink script's record: [{"attempt", "subject", "body", "id"}]."""
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for x in f:
            if x.strip():
                attempt, subject, body = x.rstrip("\n").split(" ", 2)
                out.append({"attempt": attempt, "subject": subject, "body": body, "id": json.loads(body)["id"]})
    return out


def test_sources(t, tmp, nats, g):
    d = tmp.path
    # exec_source: every JSON object line, from several runs; the rest skipped and counted.
    wait_for(lambda: len([m for m in msgs(nats, "ev.src") if m["run"] == 3]) == 3, 60, "three runs of good")
    got = msgs(nats, "ev.src")
    by_run = {}
    for m in got:
        by_run.setdefault(m["run"], []).append(m["i"])
    for run in (1, 2, 3):
        t.eq(by_run.get(run), [1, 3, 4], "run %d: the JSON object lines, in order (long line skipped)" % run)
    log = g.log()
    t.check("[source:good] skipped a stdout line that is not one JSON object (16 bytes): this is not json" in log,
            "a non-JSON line is logged")
    t.check("[source:good] skipped a stdout line that is not one JSON object (9 bytes): [1, 2, 3]" in log,
            "a JSON array is not an event")
    t.check("[source:good] skipped a stdout line longer than max_line (256 bytes)" in log, "a long line is logged")
    t.check("[source:good] run: 3 lines published, 3 skipped" in log, "per-run counts")

    # A failing command: its line is published, its exit and stderr logged, runs go on.
    wait_for(lambda: g.log().count("[source:failing] %s/fail.sh ended with exit 3" % d) >= 2, 30, "two failed runs")
    t.check("(1 lines published, 0 skipped); stderr: disk on fire" in g.log(), "stderr tail in the log")
    t.check(len(msgs(nats, "ev.failing")) >= 2, "a failing run's lines are still published")
    # A missing command: logged each time, the source keeps trying.
    wait_for(lambda: g.log().count("[source:missing] cannot start %s/no-such-tool: No such file or directory" % d)
             >= 2, 30, "the missing command retried")
    # A hanging command: killed at the timeout with what it started in its group.
    wait_for(lambda: "[source:hang] /bin/sh killed after the 2000 ms timeout (1 lines published)" in g.log(), 10,
             "the hanging run killed")
    grandchild = int(open(os.path.join(d, "hang.grandchild")).read())
    wait_for(lambda: not alive(grandchild), 5, "the grandchild killed with the process group")
    t.eq(msgs(nats, "ev.hang"), [{"hang": 1}], "the hanging run's line before the timeout")

    # The secret reaches the child's environment only.
    sec = wait_for(lambda: msgs(nats, "ev.secret"), 10, "the secret source's line")[0]
    t.eq(sec["token_sha"], hashlib.sha256(SECRET.encode()).hexdigest(), "env_file reaches the child's environment")
    t.eq(sec["secret_in_cmdline"], False, "the secret is not in the child's /proc/PID/cmdline")
    t.eq(sec["argv"], ["--mode", "two words"], "argv as written, no shell splitting")
    t.eq(sec["from_env"], "from-parent-env", "env_from copies gust's variable")
    t.eq(sec["plain"], "visible", "env NAME=value")
    t.eq(sec["private_seen"], False, "gust's other variables are not passed (inherit_env off)")
    t.eq(sec["pgid_is_pid"], True, "the child leads its own process group")
    leaked = {fd: target for fd, target in sec["fds"].items() if int(fd) > 2 and "/fd" not in target}
    t.eq(leaked, {}, "the child inherits no descriptor of gust beyond stdin/stdout/stderr")
    t.check(sec["fds"].get("1", "").startswith("pipe:") and sec["fds"].get("0") == "/dev/null",
            "stdout is our pipe, stdin /dev/null: %r" % sec["fds"])
    with open("/proc/%d/cmdline" % g.proc.pid, "rb") as f:
        t.check(SECRET.encode() not in f.read(), "the secret is not on gust's argv")

    # exec_stream: restarted after each exit with backoff, then 20000 lines with a
    # max_inflight of 64: back-pressure, nothing lost.
    wait_for(lambda: os.path.exists(os.path.join(d, "stream.done")), 60, "the stream child to write everything")

    def run3():
        return [m["id"] for m in msgs(nats, "ev.stream") if m["run"] == 3]
    wait_for(lambda: len(run3()) >= 20000, 60, "20000 stream lines stored")
    ids = run3()
    t.eq(len(ids), 20000, "every stream line published once")
    t.eq(len(set(ids)), 20000, "unique ids")
    t.eq(ids, list(range(20000)), "in order")
    early = [(m["run"], m["i"]) for m in msgs(nats, "ev.stream") if m["run"] < 3]
    t.eq(early, [(r, i) for r in (1, 2) for i in range(5)], "the lines of the runs that exited")
    log = g.log()
    t.check(log.count("[source:stream] %s ended with exit 2" % PY) == 2, "both exits logged with their status")
    t.check("[source:stream] restarting %s in 100 ms" % PY in log and
            "[source:stream] restarting %s in 200 ms" % PY in log, "restart backoff doubles")
    t.check("[source:stream] skipped a stdout line that is not one JSON object (21 bytes): garbage in the stream"
            in log, "a bad stream line is logged")
    t.eq(zombies_of(g.proc.pid), [], "no zombie children")


def test_sinks(t, tmp, nats, g):
    d = tmp.path
    batch = [("ev.sinkin", json.dumps({"id": i, "fail": i in (5, 17)}).encode()) for i in range(40)]
    nats_publish(nats.port, batch)
    par = [("ev.parin", json.dumps({"id": i}).encode()) for i in range(30)]
    nats_publish(nats.port, par)

    def dead():
        return [json.loads(m[2]) for m in nats.read_stream("GUST_DLQ") if m[1] == "dlq.run"]
    wait_for(lambda: len(dead()) >= 2, 90, "two dead letters")
    wait_for(lambda: len(calls_of(os.path.join(d, "par.txt"))) >= 30, 90, "the parallel sink's calls")
    time.sleep(0.5)
    calls = calls_of(os.path.join(d, "calls.txt"))
    good = [c["id"] for c in calls if c["id"] not in (5, 17)]
    t.eq(sorted(good), [i for i in range(40) if i not in (5, 17)], "every good message delivered exactly once")
    t.eq(good, sorted(good), "max_inflight 1 keeps stream order")
    t.eq(sorted(c["id"] for c in calls if c["id"] in (5, 17)), [5, 5, 5, 17, 17, 17], "failing ones tried max_deliver (3) times")
    # The bus's delivery count: it can skip a number (a delivery to a pull request that had
    # expired counts too), so check it starts at 1 and grows.
    att = {i: [int(c["attempt"]) for c in calls if c["id"] == i] for i in (5, 17)}
    for i in (5, 17):
        t.check(att[i][0] == 1 and att[i] == sorted(set(att[i])), "GUST_ATTEMPT counts the attempts: %r" % att[i])
    t.eq({c["subject"] for c in calls}, {"ev.sinkin"}, "GUST_SUBJECT")
    t.eq(json.loads(calls[0]["body"]), {"id": 0, "fail": False}, "the body on stdin, unchanged")
    dl = sorted(dead(), key=lambda x: json.loads(x["payload"])["id"])
    t.eq([json.loads(x["payload"])["id"] for x in dl], [5, 17], "the failing messages are dead-lettered")
    for x in dl:
        i = json.loads(x["payload"])["id"]
        t.eq(x["error"], "exit 4: some noise | cannot process %s" % x["payload"],
             "the exit status and stderr tail in the DLQ error")
        t.eq(x["attempts"], att[i][-1], "attempts in the envelope: the last attempt the command saw")
    # Cannot start, or too slow: retried (the bus keeps the message), never dead-lettered.
    nats_publish(nats.port, [("ev.nocmd", b'{"id": "n"}'), ("ev.slow", b'{"id": "s"}')])
    wait_for(lambda: g.log().count("[sink:nocmd] cannot start %s/no-such-sink: No such file or directory" % d) >= 5,
             30, "the sink that cannot start retried")
    wait_for(lambda: g.log().count("[sink:slow] /bin/sleep timed out after 300 ms on message") >= 4, 30,
             "the slow sink retried")
    dl = [m[1] for m in nats.read_stream("GUST_DLQ")]
    t.check("dlq.nocmd" not in dl and "dlq.slow" not in dl, "RETRY outcomes are not dead-lettered: %r" % dl)
    pc = calls_of(os.path.join(d, "par.txt"))
    t.eq(sorted(c["id"] for c in pc), list(range(30)), "max_inflight 4: every message once")
    t.eq(zombies_of(g.proc.pid), [], "no zombie children after the sinks")


def test_reload_and_stop(t, tmp, nats, g, conf):
    """A reload destroys the instances and creates fresh ones: the old stream child is
    killed, a new one started; a stop kills the children."""
    d = tmp.path
    old = int(open(os.path.join(d, "stream.pid")).read())
    os.unlink(os.path.join(d, "stream.pid"))
    os.unlink(os.path.join(d, "stream.done"))
    tmp.file("host.conf", conf.replace("@PORT@", str(g.port)).replace("interval 1h;", "interval 2h;"))
    g.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "reloaded" in g.log(), 20, "the reload")
    wait_for(lambda: not alive(old), 5, "the old stream child killed at stop")
    wait_for(lambda: os.path.exists(os.path.join(d, "stream.done")), 60, "a new stream child")
    new = int(open(os.path.join(d, "stream.pid")).read())
    t.check(new != old and alive(new), "a fresh stream child after the reload")
    t.check("[source:stream] stopped: 3 runs, 20010 lines published (20010 stored, 0 failed, 0 pending), 1 not JSON"
            in g.log(), "the stream's counters at stop: %s" % [x for x in g.log().split("\n") if "source:stream] stopped" in x])
    t.eq(g.stop(), 0, "clean stop")
    t.check(not alive(new), "the stream child is killed when gust stops")
    # For information only (no timing in pass/fail): how long the stop of the busy stream
    # source took, from the log's timestamps.
    stamps = [x.split(" ", 1)[0] for x in g.log().split("\n")
              if "SIGTERM: stopping" in x or "[source:stream] stopped:" in x]
    if len(stamps) >= 2:
        from datetime import datetime
        t0, t1 = (datetime.strptime(x, "%Y-%m-%dT%H:%M:%S.%fZ") for x in stamps[-2:])
        print("stop of gust to the stream source stopped: %.0f ms" % ((t1 - t0).total_seconds() * 1000))
    log = g.log()
    t.check(SECRET not in log, "the secret never appears in gust's log")
    t.check("[sink:run] stopped: " in log, "the sink reports its counts")


def test_config_errors(t, tmp):
    cases = [
        ('source s { use exec_source; subject ev.a;\ncommand "/usr/bin/tool --flag"; }',
         3, 'command: "/usr/bin/tool --flag" is one argument holding spaces'),
        ("source s { use exec_source; subject ev.a;\ncommand /bin/echo a; shell on; }",
         3, "with `shell on` the command is one string"),
        ("source s { use exec_source; subject ev.a; command /bin/true;\nenv_file TOKEN; }",
         3, 'env_file: "TOKEN" is not NAME=PATH'),
        ("source s { use exec_source; subject ev.a; command /bin/true;\nenv A=1; env_from A=HOME; }",
         3, "env_from: A is set twice"),
        ("source s { use exec_stream; subject ev.a; command /bin/true;\nrestart_min 5s; restart_max 1s; }",
         3, "restart_min must be at most restart_max"),
        ("sink s { use exec_sink; source ev.a; command /bin/true;\nmax_inflight 100; }",
         3, "max_inflight must be within 1..64"),
        ("source s { use exec_source; subject ev.a; command /bin/true;\nmax_line 2; }",
         3, "max_line must be within 16..1g"),
        ("source s { use exec_source;\ncommand /bin/true; }", 2, "missing required key 'subject'"),
    ]
    for unit, line, want in cases:
        path = tmp.file("check.conf", "plugin_dir %s; plugin exec;\n%s\nhttp { listen 127.0.0.1:%d; }\n"
                        % (PLUGINS, unit, free_port()))
        p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True, timeout=30)
        t.eq(p.returncode, 1, "refused: " + want)
        t.check("%s:%d: " % (path, line) in p.stderr and want in p.stderr,
                "%r names file:line in %r" % (want, p.stderr[-600:]))
    # A secret file that cannot be read fails the start with its path, not a crash.
    nats = NatsServer(tmp)
    try:
        path = tmp.file("start.conf", "plugin_dir %s; plugin exec;\nhttp { listen 127.0.0.1:%d; }\nnats { url %s; }\n"
                        "source s { use exec_source; subject ev.a; command /bin/true;\nenv_file T=/nonexistent/tok; }\n"
                        % (PLUGINS, free_port(), nats.url))
        p = subprocess.run([GUST, "-c", path], capture_output=True, text=True, timeout=30)
        t.eq(p.returncode, 1, "an unreadable env_file stops the start")
        t.check("%s:5: env_file T: /nonexistent/tok: No such file or directory" % path in p.stderr,
                "and names the file: %r" % p.stderr[-400:])
    finally:
        nats.stop()


def main():
    t = Checks()
    tmp = TempDir()
    d = tmp.path
    tmp.file("src.py", SRC)
    tmp.file("fail.sh", FAIL)
    os.chmod(os.path.join(d, "fail.sh"), 0o755)
    tmp.file("hang.sh", HANG)
    tmp.file("secret.py", SECRET_PY)
    tmp.file("stream.py", STREAM)
    tmp.file("sink.sh", SINK)
    tmp.file("token.txt", SECRET + "\n")
    test_config_errors(t, tmp)
    nats = NatsServer(tmp)
    conf = CONF % {"plugins": PLUGINS, "nats": nats.url, "py": PY, "d": d}
    try:
        g = Gust(tmp, conf, env={"GUST_TEST_FROM": "from-parent-env", "GUST_TEST_PRIVATE": "zzz"})
    except BaseException:
        nats.stop()
        raise
    try:
        test_sources(t, tmp, nats, g)
        test_sinks(t, tmp, nats, g)
        test_reload_and_stop(t, tmp, nats, g, conf)
    except AssertionError:
        print(g.log()[-8000:])
        raise
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
            g.proc.wait(10)
        if t.failed:
            print(g.log()[-8000:])
        nats.stop()
    if not t.failed:
        tmp.cleanup()  # kept for a look when something failed
    t.done()


if __name__ == "__main__":
    main()
