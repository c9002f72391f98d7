"""The timer plugin against a real nats-server: ticks arrive about once per interval with
consecutive tick numbers, the payload's members and valid timestamps, without drift;
`align on` ticks on multiples of the interval; a bus outage is logged and counted and
the timer goes on; reloads stop (promptly, even mid-wait on a 1h interval) and recreate
the instances; bad settings are refused by `gust -t` with file:line."""
import datetime
import json
import os
import re
import signal
import subprocess

from gustlib import BUILD, GUST, Checks, Gust, NatsServer, TempDir, wait_for

PLUGINS = os.path.join(BUILD, "plugins")
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
IV = 200  # ms, the main timer's interval

CONF = """
plugin_dir %(plugins)s;
plugin timer;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; }
source tick { use timer; interval %(iv)dms; subject ev.tick; payload '{"k":1,"s":"x y","o":{"ts":0}}';
              stats_interval 1s; }
source bare { use timer; interval 500ms; subject ev.tick.bare; align on; }
source slow { use timer; interval 1h; subject ev.tick.slow; }
"""


def check_config(t, tmp):
    base = "plugin_dir %s;\nplugin timer;\nsource tick {\n    use timer;\n    subject ev.tick;\n" % PLUGINS
    cases = [
        ("    interval 0;\n", 6, "interval must be at least 10ms", "interval 0"),
        ("    interval 1.5s;\n", 6, "interval", "interval 1.5s"),
        ("    interval soon;\n", 6, "interval", "interval soon"),
        ("    interval 1s;\n    payload '{\"k\":';\n", 7, "payload: not valid JSON", "truncated JSON payload"),
        ("    interval 1s;\n    payload 'k=1';\n", 7, "payload: not valid JSON", "non-JSON payload"),
        ("    interval 1s;\n    payload '[1,2]';\n", 7, "payload: must be a JSON object", "array payload"),
        ("    interval 1s;\n    payload '{\"tick\":5}';\n", 7, "\"tick\", which the timer adds itself",
         "payload with a stamp member"),
        ("    interval 1s;\n    stats_interval 5ms;\n", 7, "stats_interval", "stats_interval 5ms"),
        ("", 3, "interval", "missing interval"),
    ]
    for body, line, want, what in cases:
        path = tmp.file("bad.conf", base + body + "}\n")
        p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True)
        t.eq(p.returncode, 1, what + ": refused")
        t.check("%s:%d:" % (path, line) in p.stderr, "%s: names %s:%d: %s" % (what, path, line, p.stderr))
        t.check(want in p.stderr, "%s: %r in %r" % (what, want, p.stderr))
    path = tmp.file("bad.conf", "plugin_dir %s;\nplugin timer;\nsource tick {\n    use timer;\n    interval 1s;\n}\n"
                    % PLUGINS)
    p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True)
    t.eq(p.returncode, 1, "missing subject: refused")
    t.check(path + ":3:" in p.stderr and "subject" in p.stderr, "missing subject names the block: " + p.stderr)
    path = tmp.file("good.conf", base + "    interval 1s;\n    payload '{\"k\":1}';\n    align on;\n}\n")
    p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True)
    t.eq(p.returncode, 0, "a good timer passes gust -t: " + p.stderr)


def ticks(nats, subject):
    return [json.loads(d) for _, s, d in nats.read_stream() if s == subject]


def check_ticks(t, got, what):
    t.eq([m["tick"] for m in got], list(range(1, len(got) + 1)), what + ": ticks 1..n, none missing")
    for m in got:
        t.check(RFC3339.match(m["ts"]) is not None, what + ": ts is RFC 3339 UTC with ms: " + m["ts"])
        wall = datetime.datetime.strptime(m["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        t.eq(int(wall.timestamp() * 1000 + 0.5), m["ts_ms"], what + ": ts and ts_ms agree")


def main():
    t = Checks()
    tmp = TempDir()
    check_config(t, tmp)

    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % {"plugins": PLUGINS, "nats": nats.url, "iv": IV})
    try:
        # 1. About one tick per interval, on the schedule first + k * interval. A loaded
        # machine makes single ticks late (and one stalled past its slot skips it rather
        # than bursting), so the checks allow a few late ticks.
        got = wait_for(lambda: (lambda m: m if len(m) >= 16 else None)(ticks(nats, "ev.tick")), 30, "16 ticks")
        got = got[:16]
        check_ticks(t, got, "tick")
        t.eq({k: got[0][k] for k in ("k", "s", "o")}, {"k": 1, "s": "x y", "o": {"ts": 0}},
             "the payload's members as written")
        offs = [m["ts_ms"] - got[0]["ts_ms"] for m in got]
        t.check(abs(offs[-1] / IV - 15) <= 2, "16 ticks in about 15 intervals of %d ms: %r" % (IV, offs))
        late = sorted(abs(o - round(o / IV) * IV) for o in offs)
        t.check(late[len(late) // 2] < IV // 4, "ticks on the schedule: median lateness %d ms" % late[len(late) // 2])
        print("16 ticks of %d ms in %d ms; offsets from the first %r" % (IV, offs[-1], offs), flush=True)

        # 2. align on: ticks at multiples of 500 ms of the UTC clock, which would show any
        # drift; the payload {} gets only the stamp.
        bare = wait_for(lambda: (lambda m: m if len(m) >= 6 else None)(ticks(nats, "ev.tick.bare")), 15, "bare ticks")
        check_ticks(t, bare, "aligned")
        t.eq(sorted(bare[0]), ["tick", "ts", "ts_ms"], "an empty payload gets only the stamp")
        dist = sorted(min(m["ts_ms"] % 500, 500 - m["ts_ms"] % 500) for m in bare)
        t.check(dist[len(dist) // 2] < 100, "aligned to multiples of 500 ms: %r" % [m["ts_ms"] for m in bare])
        t.eq(ticks(nats, "ev.tick.slow"), [], "the 1h timer has not ticked")
        wait_for(lambda: re.search(r"\[source:tick\] \d+ ticks, \d+ stored, 0 failed", g.log()), 10,
                 "the counters in the log")

        # 3. The bus goes away: publishes fail, are logged once and counted; the timer goes
        # on and publishes again once the bus is back.
        nats.stop()
        wait_for(lambda: "[source:tick] publish failed:" in g.log(), 15, "the failure logged")
        wait_for(lambda: re.search(r"\[source:tick\] \d+ ticks, \d+ stored, [1-9]\d* failed", g.log()), 15,
                 "failures counted")
        n_down = len(re.findall(r"\[source:tick\] publish failed", g.log()))
        nats.start()
        wait_for(lambda: "[source:tick] publishing again" in g.log(), 30, "the recovery logged")
        before = len(ticks(nats, "ev.tick"))
        wait_for(lambda: len(ticks(nats, "ev.tick")) >= before + 3, 15, "ticks after the outage")
        t.eq(n_down, 1, "one log line for a whole outage")
        after = ticks(nats, "ev.tick")
        t.check(after[-1]["tick"] > len(after), "ticks during the outage were counted, not stored: last tick %d, %d stored"
                % (after[-1]["tick"], len(after)))

        # 4. Reload twice: every instance is stopped (the 1h one in the middle of its wait)
        # and destroyed, and a fresh one starts at tick 1.
        for n in (1, 2):
            g.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: g.log().count("reloaded ") >= n, 20, "reload %d" % n)
            wait_for(lambda: sum(1 for m in ticks(nats, "ev.tick") if m["tick"] == 1) >= n + 1, 10,
                     "a fresh instance ticking after reload %d" % n)
        stops = [int(x) for x in re.findall(r"\[source:slow\] stopped in (\d+) ms", g.log())]
        t.eq(len(stops), 2, "the 1h timer was stopped at each reload")
        t.check(stops and max(stops) < 500, "stop returns promptly mid-wait: %r ms" % stops)
        print("stop of a timer waiting out 1h: %r ms" % stops, flush=True)
        t.eq(g.stop(), 0, "clean stop")
        t.check(re.search(r"\[source:tick\] stopping: \d+ ticks", g.log()) is not None, "final counters logged")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        nats.stop()
        if t.failed:
            print(g.log()[-4000:])
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
