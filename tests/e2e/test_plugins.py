"""Plugin loading: a good plugin loads and publishes through the host API; another ABI
major, a newer minor, a missing entry symbol, a failing init and a missing file are
refused with an error naming the file. A plugin built against the recorded ABI 1.0
headers loads and runs (its schema, types and messages read with 1.0's sizes). A plugin
is loaded once per process: init runs once however many generations use it."""
import json
import os
import signal
import subprocess

from gustlib import BUILD, GUST, Checks, Gust, NatsServer, TempDir, wait_for

PLUGINS = os.path.join(BUILD, "test-plugins")


def main():
    t = Checks()
    tmp = TempDir()
    refused = [
        ("test_bad_abi", ["plugin ABI 99.", "this host offers ABI 1.0 to 1.", "rebuild the plugin"],
         "another ABI major"),
        ("test_new_minor", ["plugin ABI 1.999", "it needs a newer host"], "a newer minor"),
        ("test_no_entry", ["no exported symbol gust_plugin_entry"], "missing entry symbol"),
        ("test_fail_init", ["init failed: the test plugin refuses to start"], "failing init"),
        ("test_absent", ["no such file"], "missing file"),
    ]
    for name, wants, what in refused:
        path = tmp.file("host.conf", "plugin_dir %s;\n\nplugin %s;\n" % (PLUGINS, name))
        p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True)
        t.eq(p.returncode, 1, what + " is refused")
        t.check(path + ":3:" in p.stderr, what + ": names host.conf:3: " + p.stderr)
        t.check(os.path.join(PLUGINS, name + ".so") in p.stderr, what + ": names the plugin file")
        for w in wants:
            t.check(w in p.stderr, "%s: %r in %r" % (what, w, p.stderr))

    # Keys the plugin's schema does not know are refused before the plugin sees them.
    path = tmp.file("host.conf", "plugin_dir %s;\nplugin test_source;\nsource s {\n use test_once;\n subject ev.x;\n colour blue;\n}\n" % PLUGINS)
    p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True)
    t.eq(p.returncode, 1, "unknown plugin key refused")
    t.check(path + ":6: unknown key 'colour'" in p.stderr, "names the key and its line: " + p.stderr)
    path = tmp.file("host.conf", "plugin_dir %s;\nplugin test_source;\nsource s {\n use test_once;\n}\n" % PLUGINS)
    p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True)
    t.eq(p.returncode, 1, "missing required plugin key refused")
    t.check("subject" in p.stderr and path + ":3:" in p.stderr, "names the missing key: " + p.stderr)

    # The ABI 1.0 plugin's keys are checked against its own (1.0-sized) schema.
    path = tmp.file("host.conf", "plugin_dir %s;\nplugin test_old_minor;\nsink s {\n use old_file;\n source ev.x;\n"
                    " path out.txt;\n limit 7;\n colour blue;\n}\n" % PLUGINS)
    p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True)
    t.check(p.returncode == 1 and path + ":8: unknown key 'colour'" in p.stderr and "expected one of" in p.stderr
            and "limit" in p.stderr, "a 1.0 schema read whole: " + p.stderr)

    # The good plugin runs: its source publishes through the host's confirmed publish.
    nats = NatsServer(tmp)
    conf = """
plugin_dir %s;
plugin test_source;
http { listen 127.0.0.1:@PORT@; }
nats { url %s; }
source hello { use test_once; subject ev.hello; payload "{\\"from\\":\\"plugin\\"}"; }
""" % (PLUGINS, nats.url)
    g = Gust(tmp, conf)
    try:
        msgs = wait_for(lambda: nats.read_stream(), 10, "the plugin's message")
        t.eq([(m[1], json.loads(m[2])) for m in msgs], [("ev.hello", {"from": "plugin"})], "published by the plugin")
        t.check("[source:hello] publishing once to ev.hello" in g.log(), "plugin log carries the instance name")
        # Two reloads: new instances each time, the plugin loaded (and init run) once.
        for gen in (2, 3):
            g.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: json.loads(g.request("GET", "/units")[1])["generation"] == gen, 10, "generation %d" % gen)
            wait_for(lambda: g.log().count("[source:hello] publishing once") == gen, 10, "started again")
        t.eq(g.log().count("plugin test_source 1.0 loaded"), 1, "loaded once for three generations")
        t.eq(g.log().count("(init ran 1 time(s))"), 3, "init ran once, every instance saw it")
        t.eq(g.stop(), 0, "clean stop with a plugin loaded")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        if t.failed:
            print(g.log()[-3000:])

    # The ABI 1.0 plugin: its source publishes, its sink gets batches (msgs[] with 1.0's
    # element size) and its rejections reach the dead-letter envelope.
    out = os.path.join(tmp.path, "old.txt")
    conf = """
plugin_dir %s;
plugin test_old_minor;
http { listen 127.0.0.1:@PORT@; }
nats { url %s; max_deliver 1; }
source once { use old_once; subject ev.old.in; payload "{\\"n\\":0}"; label legacy; }
sink file { use old_file; source ev.old.>; path %s; prefix "> "; }
""" % (PLUGINS, nats.url, out)
    g = Gust(tmp, conf)
    try:
        t.check("plugin test_old_minor 1.0 loaded" in g.log() and "(ABI 1.0)" in g.log(), "the 1.0 plugin loads")
        wait_for(lambda: "ABI 1.0 plugin (legacy) publishing once to ev.old.in" in g.log(), 10, "the old source")
        for n in (1, 2, 3):
            t.eq(g.request("POST", "/ingest/old.in", b'{"n":%d}' % n)[0], 202, "ingest %d" % n)
        t.eq(g.request("POST", "/ingest/old.in", b'{"reject":true}')[0], 202, "ingest a rejected one")
        lines = wait_for(lambda: (lambda ls: len(ls) >= 4 and ls)(open(out).read().splitlines()
                                                                  if os.path.exists(out) else []),
                         15, "four lines from the old sink")
        seqs = {}
        for line in lines:
            prefix, subject, seq, attempt, size, payload = line.split(" ", 5)
            t.check(prefix == ">" and subject == "ev.old.in" and attempt == "1" and int(size) == len(payload),
                    "a well-formed 1.0 message: %r" % line)
            seqs[int(seq)] = json.loads(payload)["n"]
        t.eq(sorted(seqs.values()), [0, 1, 2, 3], "every message, each once, with its own seq")
        dl = wait_for(lambda: nats.read_stream("GUST_DLQ"), 15, "the rejected one dead-lettered")
        env = json.loads(dl[0][2])
        t.check("old_file refuses seq" in env["error"], "the 1.0 result's error text: %r" % env["error"])
        t.eq(g.stop(), 0, "clean stop with the 1.0 plugin")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        nats.stop()
        if t.failed:
            print(g.log()[-3000:])
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
