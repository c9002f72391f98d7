"""The console: GET /topology against the configuration, and the page at / in headless
Chromium (Debian's `chromium`).

A timer source, two flows, a detect unit, a sink and a sink whose command fails every
message, with an admin token: /topology lists each unit with its kind and state (the
failing sink "failing", the others "running"), an edge from each producer to each
consumer of its subjects (the failing sink's to the DLQ), rates once events flow, and
the gauges (the store against max_bytes, the DLQ size, the bus, RSS, each flow's heap
against memory_max). The page, with the token typed into its login form, draws a box
per unit coloured by its state and an arrow per edge; Chromium leaves the DOM, which the
test reads, and a screenshot in the test's output directory. The page stays under 100
KB and links nothing absolute."""
import base64
import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import time

from gustlib import (ADMIN_TOKEN, ADMIN_TOKEN_CONF, BUILD, SOURCE_DIR, Checks, Gust, NatsServer, TempDir,
                     wait_for)

PLUGINS = os.path.join(BUILD, "plugins")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
OUT_DIR = os.path.join(BUILD, "tests", "e2e_console")

CONF = """
plugin_dir %(plugins)s;
plugin timer;
plugin exec;
http { listen 127.0.0.1:@PORT@; %(token)s }
nats { url %(nats)s; max_deliver 2; retry_delay 50ms; retry_max_delay 100ms; max_bytes 64m; }
source tick { use timer; interval 200ms; subject ev.tick; }
webhook hook { path /hooks/tick; subject ev.tick; }
flow enrich { script %(d)s/enrich.lua; source ev.tick; memory_max 8m; }
detect spot { rules %(d)s/spot.vpl; }
flow route { script %(d)s/route.lua; source ev.detect.spot.Big; }
sink good { use exec_sink; source ev.routed; command /bin/sh %(d)s/ok.sh; }
sink bad { use exec_sink; source ev.enriched; command /bin/sh %(d)s/fail.sh; }
"""

ENRICH = """
return { on_event = function(ev) emit("ev.enriched", { event_type = "Tick", tick = ev.tick }) end }
"""
ROUTE = """
return { on_event = function(ev) emit("ev.routed", { n = ev.n }) end }
"""
SPOT = """
connector Bus = nats (url: "the host's bus")

stream Ticks = Tick.from(Bus, topic: "ev.enriched")

stream Big = Ticks
    .where(tick > 0)
    .emit(n: tick)
"""
OK_SH = "cat >/dev/null\n"
FAIL_SH = "cat >/dev/null; echo 'endpoint refused it' >&2; exit 3\n"

UNITS = {  # id: the state it must show
    "source:tick": "running",
    "flow:enrich": "running",
    "detect:spot": "running",
    "flow:route": "running",
    "sink:good": "running",
    "sink:bad": "failing",
}
EDGES = {  # (from, to, subject)
    ("source:tick", "flow:enrich", "ev.tick"),
    ("flow:enrich", "detect:spot", "ev.enriched"),
    ("flow:enrich", "sink:bad", "ev.enriched"),
    ("detect:spot", "flow:route", "ev.detect.spot.Big"),
    ("flow:route", "sink:good", "ev.routed"),
    ("sink:bad", "dlq:dlq", "dlq.bad"),
    ("webhook:hook", "flow:enrich", "ev.tick"),  # before any delivery: its configured subject
}


def topology(g, spark=True):
    status, body, _ = g.request("GET", "/topology" + ("" if spark else "?spark=0"))
    assert status == 200, (status, body)
    return json.loads(body)


def check_topology(t, g):
    # Admin: without the token, 401.
    t.eq(g.request("GET", "/topology", headers={"Authorization": "Bearer nope"})[0], 401, "wrong token refused")

    def settled():
        d = topology(g)
        nodes = {n["id"]: n for n in d["nodes"]}
        edges = {(e["from"], e["to"], e["subject"]) for e in d["edges"]}
        return all(nodes.get(i, {}).get("state") == s for i, s in UNITS.items()) and EDGES <= edges and d
    d = wait_for(settled, 30, "every unit in its state and every edge drawn")
    nodes = {n["id"]: n for n in d["nodes"]}
    t.check(set(UNITS) | {"ingest:ingest", "webhook:hook", "dlq:dlq"} == set(nodes), "nodes: %s" % sorted(nodes))
    for i, n in nodes.items():
        t.eq(n["kind"] + ":" + n["name"], i, "id is kind:name")
    t.eq(nodes["flow:enrich"]["inputs"], ["ev.tick"], "enrich's input: the flow's source")
    t.eq(nodes["flow:enrich"]["outputs"], ["ev.enriched"], "enrich's outputs: what it emitted to")
    t.eq(nodes["detect:spot"]["inputs"], ["ev.enriched"], "spot's input: its program's .from()")
    t.eq(nodes["sink:bad"]["inputs"], ["ev.enriched"], "bad's input")
    t.check(nodes["sink:bad"]["last_error"] and "exit" in nodes["sink:bad"]["last_error"],
            "bad's last error: %r" % nodes["sink:bad"]["last_error"])
    t.check(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", nodes["sink:bad"]["last_error_at"] or ""),
            "bad's last error has its time")
    t.check(nodes["sink:bad"]["errors_1m"] > 0, "bad's errors in the last minute")
    t.eq(nodes["sink:good"]["errors_1m"], 0, "good has none")
    t.check(nodes["sink:bad"]["dead_letters"] > 0, "bad dead-letters")
    t.check(nodes["sink:good"]["backlog"] is not None, "a durable unit's backlog is known")
    t.eq(nodes["flow:enrich"]["memory_max"], 8 << 20, "enrich's memory_max")
    t.check(nodes["flow:enrich"]["heap_bytes"] > 0, "enrich's heap")

    # Rates once samples are apart (an edge's once two samples of the subject's count
    # are: up to 2 intervals): the timer ticks 5 a second.
    def flowing():
        d = topology(g)
        n = {x["id"]: x for x in d["nodes"]}
        e = [x for x in d["edges"] if x["from"] == "source:tick" and x["to"] == "flow:enrich"]
        return n["source:tick"]["out_per_s"] > 1 and n["flow:enrich"]["in_per_s"] > 1 and e[0]["per_s"] > 1 and d
    d = wait_for(flowing, 20, "rates")
    n = {x["id"]: x for x in d["nodes"]}
    t.check(n["flow:enrich"]["out_per_s"] > 1, "enrich emits: %r" % n["flow:enrich"]["out_per_s"])
    t.check(all(len(x["spark"]["in"]) == len(x["spark"]["backlog"]) for x in d["nodes"]), "sparklines")
    t.check("spark" not in topology(g, spark=False)["nodes"][0], "?spark=0 leaves them out")

    gauges = d["gauges"]
    streams = {s["role"]: s for s in gauges["store"]["streams"]}
    t.eq(streams["events"]["max_bytes"], 64 << 20, "the store against max_bytes of host.conf")
    t.check(streams["events"]["bytes"] > 0, "the store's bytes")
    # The DLQ stream's size, as the retention thread last read it (every 250 ms).
    wait_for(lambda: {s["role"]: s for s in topology(g, False)["gauges"]["store"]["streams"]}["dlq"]["messages"] > 0,
             10, "the DLQ's size")
    t.eq(gauges["bus"], {"connected": True, "healthy": True, "ingest_link": True}, "bus state")
    t.check(gauges["memory"]["rss_bytes"] > 1 << 20, "RSS")
    flows = {f["unit"]: f for f in gauges["memory"]["flows"]}
    t.eq(sorted(flows), ["enrich", "route"], "each flow's heap")
    t.eq(flows["enrich"]["memory_max"], 8 << 20, "against its memory_max")
    # Leases: the singleton source and the detect unit's slice, held by this process.
    leases = {x["name"]: x for x in gauges["cluster"]["leases"]}
    t.check(leases["tick"]["held"] and leases["detect.spot.0"]["held"], "leases held: %r" % leases)
    t.check("nodes" not in gauges["cluster"], "no node directory without `cluster on`")

    # An ingest route shows once something was ingested, with an edge to its consumer.
    g.request("POST", "/ingest/tick", b'{"tick": 0}')
    edges = {(x["from"], x["to"], x["subject"]) for x in topology(g, False)["edges"]}
    t.check(("ingest:ingest", "flow:enrich", "ev.tick") in edges, "ingest's edge")


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe
    (--remote-debugging-pipe: it reads JSON commands, each ended by a NUL, on fd 3 and
    answers on fd 4), so that the test can type the token into the login form: no
    chromedriver, no pip package."""

    def __init__(self, tmp):
        profile = os.path.join(tmp.path, "chromium-profile")
        os.makedirs(profile, exist_ok=True)
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()
        hi_r, hi_w = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)

        def fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
             "--user-data-dir=" + profile, "--window-size=1400,1000", "--remote-debugging-pipe", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=fds, close_fds=False)
        for fd in (to_r, from_w, hi_r, hi_w):
            os.close(fd)
        self.buf = b""
        self.next_id = 0
        targets = self.call("Target.getTargets")["targetInfos"]
        page = [x for x in targets if x["type"] == "page"]
        target = page[0]["targetId"] if page else self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.buf:
                line, self.buf = self.buf.split(b"\0", 1)
                r = json.loads(line)
                if r.get("id") == self.next_id:
                    if "error" in r:
                        raise RuntimeError("%s: %s" % (method, r["error"]))
                    return r["result"]
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_r], [], [], left)[0]:
                raise TimeoutError(method)
            chunk = os.read(self.from_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium went away")
            self.buf += chunk

    def page(self, method, params=None):
        return self.call(method, params, session=self.session)

    def js(self, expr):
        r = self.page("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        return r["result"].get("value")

    def wait_js(self, expr, timeout, what):
        return wait_for(lambda: self.js(expr), timeout, what)

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_w)
        os.close(self.from_r)


def check_page(t, tmp, g):
    status, page, _ = g.request("GET", "/", headers={"Authorization": "Bearer not-needed"})
    page = page.decode()
    t.eq(status, 200, "the page is served without the token (it holds no data)")
    t.check(len(page) < 100 * 1024, "the page is under 100 KB: %d" % len(page))
    refs = re.findall(r'(?:src|href)\s*=\s*["\']([^"\']*)', page)
    t.check(all(not re.match(r"^(?:[a-z]+:|//|/)", r, re.I) for r in refs), "no absolute URL: %r" % refs)
    t.check(not re.search(r"(?:fetch|url)\(\s*['\"]?(?:[a-z]+:|//)", page, re.I), "nothing fetched from outside")
    b = Browser(tmp)
    try:
        b.page("Page.navigate", {"url": "http://127.0.0.1:%d/" % g.port})
        b.wait_js("document.getElementById('login').style.display === 'block'", 20, "the login form")
        b.js("document.getElementById('token').value = %s; document.getElementById('login').requestSubmit(); 1"
             % json.dumps(ADMIN_TOKEN))
        want = len(UNITS) + 3
        b.wait_js("document.querySelectorAll('g.node').length >= %d && "
                  "document.querySelectorAll('#units tbody tr').length > 0" % want, 20, "the graph drawn")
        t.check(ADMIN_TOKEN not in b.js("location.href"), "the token is not in the address")
        # Details on a click: its last error, its counters from /units, its dead letters.
        b.js("document.querySelector('g.node[data-id=\"sink:bad\"]').dispatchEvent(new MouseEvent('click')); 1")
        details = b.wait_js("(function (t) { return t.indexOf('Dead letters') >= 0 && t; })"
                            "(document.getElementById('details').textContent)", 10, "the details of sink bad")
        t.check("endpoint refused it" in details, "the details show its last error")
        t.check("last_error_at" in details and "fetches" in details, "and its counters from /units")
        dom = b.js("document.documentElement.outerHTML")
        boxes = {i: s for s, i in re.findall(r'<g class="node state-([a-z]+)(?: sel)?" data-id="([^"]+)"', dom)}
        for i, s in UNITS.items():
            t.eq(boxes.get(i), s, "%s drawn %s" % (i, s))
        arrows = set(re.findall(r'<path class="edge[^"]*" data-from="([^"]+)" data-to="([^"]+)"', dom))
        for f, to, _ in EDGES:
            t.check((f, to) in arrows, "an arrow from %s to %s" % (f, to))
        t.check('id="gauge-store"' in dom and "64.0 MB" in dom, "the store gauge against max_bytes")
        t.check('id="gauge-heap-enrich"' in dom and "8.0 MB" in dom, "enrich's heap against memory_max")
        if t.failed:
            print(dom[-6000:])
        os.makedirs(OUT_DIR, exist_ok=True)
        shot = os.path.join(OUT_DIR, "console.png")
        png = base64.b64decode(b.page("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"])
        with open(shot, "wb") as f:
            f.write(png)
        t.check(len(png) > 10000, "screenshot written to %s (%d bytes)" % (shot, len(png)))
    finally:
        b.close()


def main():
    t = Checks()
    if not os.path.exists(CHROMIUM):
        print("chromium is not installed (build.sh deps installs it)")
        t.check(False, "chromium present")
        t.done()
    tmp = TempDir()
    tmp.file("enrich.lua", ENRICH)
    tmp.file("route.lua", ROUTE)
    tmp.file("spot.vpl", SPOT)
    tmp.file("ok.sh", OK_SH)
    tmp.file("fail.sh", FAIL_SH)
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % {"plugins": PLUGINS, "nats": nats.url, "d": tmp.path, "token": ADMIN_TOKEN_CONF})
    try:
        check_topology(t, g)
        check_page(t, tmp, g)
    finally:
        g.stop()
        nats.stop()
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
