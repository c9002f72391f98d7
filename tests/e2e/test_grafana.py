"""packaging/grafana: the dashboard and the alert rules name only metrics that GET
/metrics serves (a gust with a flow and a sink, after some traffic), and the alert rules
cover every cause /healthz reports."""
import json
import os
import re

from gustlib import SOURCE_DIR, Checks, Gust, NatsServer, TempDir, wait_for

DIR = os.path.join(SOURCE_DIR, "packaging", "grafana")
CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; }
flow copy { script %(d)s/copy.lua; source ev.in; }
relay fwd { source ev.out; to ev.done; }
"""
COPY = 'return { on_event = function(ev) emit("ev.out", ev) end }\n'
# What gust_health_render reports (host/http/health.c) and the rule that watches each.
HEALTH_CAUSES = {"bus": "gust_bus_healthy", "ingest_link": "gust_ingest_bus_connected", "store_full": "gust_store_full",
                 "unit_not_running": "gust_unit_running", "unit_stuck": "gust_unit_stuck_seconds"}


def served_names(text):
    names = set()
    for line in text.splitlines():
        m = re.match(r"# (?:HELP|TYPE) (\w+)", line) or re.match(r"(\w+)[{ ]", line)
        if m:
            names.add(m.group(1))
    return names


def exprs_of_dashboard(d):
    out = [a["expr"] for a in d.get("annotations", {}).get("list", []) if "expr" in a]
    for p in d["panels"]:
        out += [t["expr"] for t in p.get("targets", [])]
    for v in d["templating"]["list"]:
        if isinstance(v.get("query"), dict):
            out.append(v["query"]["query"])
    return out


def main():
    t = Checks()
    with open(os.path.join(DIR, "gust-dashboard.json")) as f:
        dash = json.load(f)
    with open(os.path.join(DIR, "gust-alerts.yml")) as f:
        rules = f.read()
    rule_exprs = re.findall(r"^\s+expr: (.+)$", rules, re.M)
    t.check(len(rule_exprs) == len(re.findall(r"^\s+- alert: ", rules, re.M)), "every alert has an expr")
    health = open(os.path.join(SOURCE_DIR, "host", "http", "health.c")).read()
    t.eq(set(re.findall(r'add\(h, "(\w+)"', health)), set(HEALTH_CAUSES), "the causes /healthz reports")
    for cause, metric in HEALTH_CAUSES.items():
        t.check(any(metric in e for e in rule_exprs), "an alert rule for healthz's %s (%s)" % (cause, metric))

    tmp = TempDir()
    tmp.file("copy.lua", COPY)
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % {"nats": nats.url, "d": tmp.path})
    try:
        g.request("POST", "/ingest/in", b'{"k": 1}')
        wait_for(lambda: b'gust_unit_events_ok_total{unit="fwd",kind="relay"} 1' in g.request("GET", "/metrics")[1],
                 15, "the event through both units")
        wait_for(lambda: b"gust_stream_bytes{" in g.request("GET", "/metrics")[1], 10, "the streams' sizes")
        served = served_names(g.request("GET", "/metrics")[1].decode())
        used = set()
        for e in exprs_of_dashboard(dash) + rule_exprs:
            used |= set(re.findall(r"\bgust_\w+", e))
        t.check(len(used) >= 15, "the dashboard and rules use %d metrics" % len(used))
        for name in sorted(used):
            t.check(name in served, "%s is served by /metrics" % name)
        t.check(all(p["datasource"]["uid"] == "${datasource}" for p in dash["panels"]), "panels use the variable")
    finally:
        g.stop()
        nats.stop()
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
