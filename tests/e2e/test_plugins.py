"""Plugin loading: a good plugin loads and publishes through the host API; another ABI
major, a missing entry symbol, a failing init and a missing file are refused with an
error naming the file."""
import json
import os
import subprocess

from gustlib import BUILD, GUST, Checks, Gust, NatsServer, TempDir, wait_for

PLUGINS = os.path.join(BUILD, "test-plugins")


def main():
    t = Checks()
    tmp = TempDir()
    refused = [
        ("test_bad_abi", ["plugin ABI 99.", "host ABI 1."], "another ABI major"),
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
        t.eq(g.stop(), 0, "clean stop with a plugin loaded")
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
