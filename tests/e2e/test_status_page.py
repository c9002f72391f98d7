"""The status page in a real browser: headless Chromium (Debian's `chromium`) loads
http://nginx/gust/ through the README's nginx location block, runs the page's script,
and the DOM it leaves shows the units (names, kinds, states), the recent events and
the dead letters, all fetched with relative URLs under the prefix."""
import json
import os
import shutil
import subprocess

from gustlib import SOURCE_DIR, Checks, Gust, NatsServer, Nginx, TempDir, wait_for

CONF = """
http { listen 127.0.0.1:@PORT@; base_path /gust; trusted_proxies 127.0.0.1 ::1; }
nats { url %(nats)s; max_deliver 1; }
flow picky { script %(tmp)s/picky.lua; }
relay copy { source ev.copy.in; to ev.copy.out; }
"""

PICKY = """
return {
  source = "ev.picky",
  on_event = function(ev)
    if ev.bad then error("refusing event " .. ev.n) end
    emit("ev.picky.out", { n = ev.n })
  end,
}
"""

LOCATION = os.path.join(SOURCE_DIR, "tests", "e2e", "nginx_location.conf")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def dump_dom(tmp, url):
    profile = os.path.join(tmp.path, "chromium-profile")
    os.makedirs(profile, exist_ok=True)
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", "--no-first-run",
                        "--disable-dev-shm-usage", "--user-data-dir=" + profile,
                        "--virtual-time-budget=5000", "--dump-dom", url],
                       capture_output=True, timeout=120)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def main():
    t = Checks()
    if not os.path.exists(CHROMIUM):
        print("chromium is not installed (build.sh deps installs it)")
        t.check(False, "chromium present")
        t.done()
    tmp = TempDir()
    tmp.file("picky.lua", PICKY)
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % {"nats": nats.url, "tmp": tmp.path})
    ngx = None
    try:
        ngx = Nginx(tmp, "        include %s;" % LOCATION, upstreams={"gust": g.port})
        ngx.request("POST", "/gust/ingest/picky", json.dumps({"n": 7, "note": "hello-from-page-test"}).encode())
        ngx.request("POST", "/gust/ingest/picky", json.dumps({"n": 8, "bad": True}).encode())
        ngx.request("POST", "/gust/ingest/copy.in", b'{"k": 1}')
        wait_for(lambda: json.loads(ngx.request("GET", "/gust/dlq")[1])["total"] == 1, 15, "a dead letter")

        rc, dom, err = dump_dom(tmp, "http://127.0.0.1:%d/gust/" % ngx.port)
        t.eq(rc, 0, "chromium ran")
        if rc != 0:
            print(err[-2000:])
        rows = [r for r in dom.split("<tr") if 'class="unit"' in r]
        t.eq(len(rows), 2, "two unit rows rendered")
        t.check(any("<td>picky</td><td>flow</td>" in r for r in rows), "picky row: %r" % rows[:1])
        t.check(any("<td>copy</td><td>relay</td>" in r for r in rows), "copy row")
        t.check(dom.count('class="ok">running</td>') == 2, "both running")
        t.check("hello-from-page-test" in dom, "recent events rendered")
        t.check("refusing event 8" in dom, "dead letter (or its event) rendered with the error")
        t.check('id="dlqtotal">(1)</span>' in dom, "dead-letter total")
        t.check("updated" in dom, "status line updated by the script")
        if t.failed:
            print(dom[-4000:])
        # The page without the trailing slash: nginx redirects, the page still works.
        rc, dom2, _ = dump_dom(tmp, "http://127.0.0.1:%d/gust" % ngx.port)
        t.check(rc == 0 and dom2.count('class="unit"') == 2, "via /gust (redirected)")
    finally:
        if ngx is not None:
            ngx.stop()
        g.stop()
        nats.stop()
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
