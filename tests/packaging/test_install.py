"""`cmake --install` into a staging directory, then, from that tree alone: the installed
gust finds its plugins without plugin_dir (lib/.../gust/plugins beside sbin/), the
example plugin builds out of tree with `pkg-config --cflags --libs gust-plugin` only, and
the installed gust loads it and runs its source and sink against a real nats-server.
Usage: test_install.py BUILD_DIR SOURCE_DIR"""
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from gustlib import Checks, NatsServer, TempDir, free_port, wait_for  # noqa: E402


def main():
    build, src = sys.argv[1], sys.argv[2]
    t = Checks()
    tmp = TempDir()
    stage = os.path.join(tmp.path, "stage")
    subprocess.run(["cmake", "--install", build], check=True, capture_output=True, env=dict(os.environ, DESTDIR=stage))
    gust = glob.glob(stage + "/**/sbin/gust", recursive=True)
    t.eq(len(gust), 1, "gust installed in sbin")
    gust = gust[0]
    plugdirs = glob.glob(stage + "/**/gust/plugins", recursive=True)
    t.eq(len(plugdirs), 1, "one plugin directory")
    for name in ("http_out", "mqtt", "timer", "http_poll", "exec", "amqp"):
        t.check(os.path.exists(os.path.join(plugdirs[0], name + ".so")), name + ".so installed")
    for f in ("include/gust/plugin.h", "include/gust/sdk.h", "include/gust/source.h", "share/man/man5/gust-host.conf.5",
              "share/man/man8/gust.8"):
        t.check(glob.glob(stage + "/**/" + f, recursive=True), f + " installed")
    t.check(glob.glob(stage + "/**/libgust-sdk.a", recursive=True), "libgust-sdk.a installed")
    t.check(glob.glob(stage + "/**/systemd/system/gust.service", recursive=True), "the unit installed")
    t.check(glob.glob(stage + "/**/etc/gust/host.conf", recursive=True), "the example config installed")

    # The example plugin, out of tree: a copy of examples/plugin and the staged SDK.
    pcdir = os.path.dirname(glob.glob(stage + "/**/pkgconfig/gust-plugin.pc", recursive=True)[0])
    work = os.path.join(tmp.path, "example")
    shutil.copytree(os.path.join(src, "examples", "plugin"), work)
    env = dict(os.environ, PKG_CONFIG_PATH=pcdir, PKG_CONFIG_SYSROOT_DIR=stage)
    p = subprocess.run(["make", "-C", work], capture_output=True, text=True, env=env)
    t.eq(p.returncode, 0, "the example builds with pkg-config only: " + p.stdout + p.stderr)
    t.check("-I" + stage in p.stdout, "its include path is the staged SDK's")
    shutil.copy(os.path.join(work, "example.so"), plugdirs[0])
    out = subprocess.run([gust, "--help"], capture_output=True, text=True).stdout
    t.check("use counter; } (plugin example)" in out and "use file_out; } (plugin example)" in out,
            "the installed gust --help lists the example's types")

    nats = NatsServer(tmp)
    port = free_port()
    lines = os.path.join(tmp.path, "count.jsonl")
    conf = os.path.join(tmp.path, "host.conf")
    with open(conf, "w") as f:
        f.write("""
state_dir %s/state;
http { listen 127.0.0.1:%d; }
nats { url %s; }
plugin example;
plugin http_out;
source count { use counter; subject ev.count; interval 20ms; }
sink log { use file_out; source ev.count; path %s; }
""" % (tmp.path, port, nats.url, lines))
    p = subprocess.run([gust, "-t", "-c", conf], capture_output=True, text=True)
    t.eq(p.returncode, 0, "gust -t with installed plugins and no plugin_dir: " + p.stderr)
    log = open(os.path.join(tmp.path, "gust.log"), "ab")
    g = subprocess.Popen([gust, "-c", conf], stdout=log, stderr=log)
    try:
        got = wait_for(lambda: (lambda ls: len(ls) >= 5 and ls)(open(lines).read().splitlines()
                                                               if os.path.exists(lines) else []),
                       20, "five lines from the example's sink")
        first = [json.loads(x) for x in got[:5]]
        t.eq([x["event"]["n"] for x in first], [1, 2, 3, 4, 5], "the counter's messages, in order")
        t.check(all(x["subject"] == "ev.count" and x["seq"] > 0 for x in first), "subject and seq in each line")
        g.terminate()
        t.eq(g.wait(10), 0, "clean stop")
    finally:
        if g.poll() is None:
            g.kill()
        nats.stop()
        if t.failed:
            print(open(os.path.join(tmp.path, "gust.log")).read()[-3000:])
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
