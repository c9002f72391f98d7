"""gust -t, --help and --version: good files pass; each kind of broken file fails
with the file:line of the problem; the process exits 0/1 like nginx -t."""
import os
import subprocess

from gustlib import GUST, SOURCE_DIR, Checks, TempDir


def gust_t(tmp, conf, name="host.conf", env=None):
    path = tmp.file(name, conf)
    p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    return p.returncode, p.stderr


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("scripts/ok.lua", 'return { source = "ev.in", on_event = function(ev) emit("ev.out", ev) end }\n')
    tmp.file("scripts/broken.lua", 'return { on_event = function(ev)\n  emit("ev.out", ev)\n end\n')
    tmp.file("rules/ok.vpl", open(os.path.join(SOURCE_DIR, "rules", "bench_orders.vpl")).read())
    tmp.file("rules/broken.vpl", "stream X = Foo\n    .where(a >\n")
    # A window over a sequence's results: that state cannot be split into slices.
    tmp.file("rules/chained.vpl", 'connector Bus = nats (url: "x")\nevent A:\n    k: str\n'
             'stream As = A.from(Bus, topic: "ev.a")\n'
             'stream Seq = As as x -> As where k == x.k as y .within(1m) .partition_by(k) .emit(k: x.k)\n'
             'stream Count = Seq.window(3).aggregate(n: count()).emit(n: n)\n')
    # paths are relative to the file that names them
    tmp.file("conf.d/extra.conf", "flow extra { script ../scripts/ok.lua; }\n")

    good = """
# a full example
state_dir var;
log_level warn;
http {
    listen 127.0.0.1:8787;
    base_path /gust;
    max_body 512k;
    trusted_proxies 127.0.0.1 ::1;
}
nats {
    url nats://127.0.0.1:4222 nats://u:p@127.0.0.1:4223 nats://token@[::1]:4224 localhost;
    stream GUST;
    subjects "ev.>";
    max_deliver 5;
    publish_timeout 2s;
}
flow orders { script scripts/ok.lua; source ev.${GUST_TEST_SUFFIX}; timeout 250ms; }
detect bench { rules rules/ok.vpl; }
detect sliced { rules rules/ok.vpl; slices 4; checkpoint_interval 1s; checkpoint_events 5000; }
include conf.d/*.conf;
"""
    rc, err = gust_t(tmp, good, env={"GUST_TEST_SUFFIX": "orders"})
    t.eq(rc, 0, "good file: " + err)
    t.check("test is successful" in err, "success message")

    p = tmp.path + "/host.conf"
    bad = [
        ("nats { url nats://x:1; }\nhttp { listen 127.0.0.1:8787 }\n", p + ":2:", "missing ';'"),
        ("http {\n  listne 127.0.0.1:1;\n}\n", p + ":2: unknown key 'listne'", "unknown key"),
        ("http {\n  max_body 12q;\n}\n", p + ":2:", "bad size"),
        ("http {\n  listen nowhere;\n}\n", p + ":2:", "bad address"),
        ("\n\nflow a { source ev.x; }\n", p + ":3:", "missing required script"),
        ("flow a {\n script scripts/ok.lua;\n source ev.*.x..y;\n}\n", p + ":3:", "bad subject"),
        ("flow a { script scripts/ok.lua; }\nflow a { script scripts/ok.lua; }\n", p + ":2:", "duplicate unit"),
        ("flow a { script scripts/missing.lua; }\n", "missing.lua", "missing script"),
        ("flow a { script scripts/broken.lua; }\n", "broken.lua:", "Lua syntax error"),
        ("detect d { rules rules/broken.vpl; }\n", "broken.vpl:", "VPL syntax error"),
        ("detect d {\n rules rules/chained.vpl;\n slices 8;\n}\n", p + ":3: detect 'd': slices 8: stream Count reads Seq",
         "a program that cannot be sliced"),
        ("detect d {\n rules rules/ok.vpl;\n slices 0;\n}\n", p + ":3:", "slices out of range"),
        ("flow a { script scripts/ok.lua; source ev.${GUST_UNSET_VAR_XYZ}; }\n", p + ":1:", "undefined ${ENV}"),
        ("include missing.conf;\n", p + ":1:", "missing include"),
        ("http {\n", p, "unterminated block"),
        ("}\n", p + ":1:", "stray brace"),
        ("frobnicate on;\n", p + ":1: unknown key 'frobnicate'", "unknown top-level key"),
        ("sink s { use nothing_here; source ev.x; }\n", p + ":1:", "unknown plugin type"),
        ("plugin no_such_plugin;\n", p + ":1:", "missing plugin file"),
        ("log_level loud;\n", p + ":1:", "bad log level"),
        ("nats {\n  url nats://127.0.0.1:4222\n      tls://127.0.0.1:4223;\n}\n",
         p + ":2: url: some URLs are tls:// and some nats://", "tls:// and nats:// bus URLs mixed"),
        ("nats { url http://127.0.0.1:4222; }\n", p + ":1: url http://127.0.0.1:4222: only nats:// and tls://",
         "an http:// bus URL"),
        ("nats { url nats://127.0.0.1:42x; }\n", p + ":1: url nats://127.0.0.1:42x: bad port", "bad port"),
        ("secrets {\n  vault_addr vault.example:8200;\n}\n", p + ":2: invalid URL for 'vault_addr'",
         "a vault_addr without a scheme"),
        ("secrets {\n  vault_addr ftp://vault.example:8200;\n}\n",
         p + ":2: vault_addr must be a URL of scheme http|https in secrets", "a vault_addr of another scheme"),
        ("otlp {\n  endpoint http://collector:99999/v1/traces;\n}\n", p + ":2: invalid URL for 'endpoint'",
         "an otlp endpoint with a bad port"),
    ]
    for conf, want, what in bad:
        rc, err = gust_t(tmp, conf)
        t.eq(rc, 1, what + " exits 1")
        t.check(want in err, "%s: %r not in %r" % (what, want, err))
        t.check("test failed" in err, what + ": failure message")

    rc, err = gust_t(tmp, "", name="empty.conf")
    t.eq(rc, 0, "an empty file takes every default: " + err)

    h = subprocess.run([GUST, "--help"], capture_output=True, text=True)
    t.eq(h.returncode, 0, "--help exit status")
    for key in ["-t", "--config", "max_body", "publish_timeout", "script", "rules"]:
        t.check(key in h.stdout, "--help mentions " + key)
    v = subprocess.run([GUST, "--version"], capture_output=True, text=True)
    t.check(v.returncode == 0 and v.stdout.startswith("gust "), "--version")
    u = subprocess.run([GUST, "--bogus"], capture_output=True, text=True)
    t.eq(u.returncode, 2, "unknown option exits 2")
    r = subprocess.run([GUST, "-c", tmp.path + "/nope.conf"], capture_output=True, text=True)
    t.eq(r.returncode, 1, "running on a missing file exits 1")
    t.check("nope.conf" in r.stderr, "names the missing file")
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
