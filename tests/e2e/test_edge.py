"""The edge path against a real mosquitto and nats-server: QoS 0 readings -> mqtt_in ->
(in memory) a Lua flow and a VPL detect unit -> their emits in JetStream -> mqtt_out ->
a checking subscriber; nothing of the input is stored in the stream; a full edge queue
drops and counts; a reload feeds the new generation's units from its own source;
config errors name file:line."""
import json
import os
import signal
import subprocess

from gustlib import BUILD, GUST, Checks, Gust, Mosquitto, NatsServer, TempDir, free_port, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RATE_PUB = os.path.join(BUILD, "bench", "gust-mqtt-rate-pub")
CHECK = os.path.join(BUILD, "bench", "gust-mqtt-check")

CONF = """
plugin_dir %(plugins)s;
plugin mqtt;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; }
source sensors { use mqtt_in; broker %(broker)s; topic tele/#; subject ev.telemetry; qos 0; }
flow telemetry { script %(root)s/scripts/telemetry.lua; edge sensors; %(queue)s }
detect windows { rules %(root)s/rules/device_window.vpl; edge sensors; }
sink tout { use mqtt_out; source ev.telemetry.out; broker %(broker)s; topic "out/{payload.device}"; qos 1; }
sink wout { use mqtt_out; source ev.telemetry.windows; broker %(broker)s; topic "win/{payload.device}"; qos 1; }
"""


class Check:
    """gust-mqtt-check in the background, once subscribed."""

    def __init__(self, broker, filt, mode, n, rate, client_id, timeout=60):
        self.proc = subprocess.Popen([CHECK, "127.0.0.1", str(broker.port), filt, mode, str(n), str(rate),
                                      str(timeout), "--id", client_id], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        assert line.strip() == "ready", "checker: " + line

    def result(self):
        out, _ = self.proc.communicate(timeout=120)
        return json.loads(out.strip().split("\n")[-1])


def publish(broker, n, rate, conns=2, flush=False):
    p = subprocess.run([RATE_PUB, "127.0.0.1", str(broker.port), "tele", str(n), str(rate), "--conns", str(conns)]
                       + (["--flush"] if flush else []), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, "publisher: " + p.stdout + p.stderr
    return json.loads(p.stdout)


def unit(g, name):
    return next(u for u in json.loads(g.request("GET", "/units")[1])["units"] if u["name"] == name)


def conf_for(tmp, nats, broker, queue=""):
    return CONF % {"plugins": os.path.join(BUILD, "plugins"), "nats": nats.url, "broker": broker.addr,
                   "root": ROOT, "queue": queue}


def test_pipeline(t, tmp, nats, broker):
    g = Gust(tmp, conf_for(tmp, nats, broker))
    try:
        wait_for(lambda: "[source:sensors] subscribed to tele/#" in g.log(), 10, "mqtt_in subscribed")
        wait_for(lambda: g.log().count("] connected to") >= 2, 10, "the sinks connected")
        t.check("[flow_telemetry] fed in memory by source 'sensors' (edge path: at most once" in g.log(),
                "the edge unit says what it is")
        n = 3000
        tel = Check(broker, "out/#", "telemetry", n, 3000, "edge-tel")
        win = Check(broker, "win/#", "windows", n, 3000, "edge-win")
        publish(broker, n, 3000)
        # The windows close on event time: once every reading is in, a later one closes them.
        wait_for(lambda: unit(g, "windows")["events_ok"] == n, 20, "the detect unit to take every reading")
        publish(broker, n, 3000, flush=True)
        r = tel.result()
        t.eq((r["unique"], r["missing"], r["bad"], r["duplicates"], r["devices_wrong"]), (r["expected"], 0, 0, 0, 0),
             "telemetry: every high reading arrives, right: %r" % r)
        t.eq(r["expected"], 1500, "half the readings pass the filter")
        r = win.result()
        t.eq((r["unique"], r["missing"], r["bad"], r["duplicates"], r["devices_wrong"]), (r["expected"], 0, 0, 0, 0),
             "windows: one right alert per device and 10 s bin: %r" % r)

        subjects = {}
        for _, subject, _ in nats.read_stream():
            subjects[subject] = subjects.get(subject, 0) + 1
        t.eq(subjects, {"ev.telemetry.out": 1500, "ev.telemetry.windows": r["expected"]},
             "only the emits are stored: nothing of the input goes into the stream")
        for name, kind in (("telemetry", "flow"), ("windows", "detect")):
            u = unit(g, name)
            t.eq((u["kind"], u["source"], u["state"]), (kind, "edge:sensors", "running"), name + " in /units")
            wait_for(lambda: unit(g, name)["events_ok"] == n + 1, 10, name + " to take the flush")
            u = unit(g, name)
            t.eq((u["edge"]["source"], u["edge"]["received"], u["edge"]["dropped"], u["edge"]["queue_capacity"]),
                 ("sensors", n + 1, 0, 65536), name + ": edge counters (the readings and the flush)")
            t.eq(u["events_ok"], n + 1, name + ": every reading handled")
        metrics = g.request("GET", "/metrics")[1].decode()
        t.check('gust_unit_edge_received_total{unit="telemetry",kind="flow",source="sensors"} %d' % (n + 1) in metrics,
                "edge metrics")
        # The console draws the source's arrows to its edge units, none through the bus.
        edges = {(e["from"], e["to"], e["subject"]) for e in json.loads(g.request("GET", "/topology")[1])["edges"]}
        from_source = {e for e in edges if e[0] == "source:sensors"}
        t.eq(from_source, {("source:sensors", "flow:telemetry", "(edge)"), ("source:sensors", "detect:windows", "(edge)")},
             "topology: the edge path")

        # Reload: the new generation's source feeds the new generation's units.
        g.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: json.loads(g.request("GET", "/units")[1])["generation"] == 2, 20, "generation 2")
        wait_for(lambda: g.log().count("[source:sensors] subscribed to tele/#") >= 2, 10, "the new mqtt_in")
        tel = Check(broker, "out/#", "telemetry", 1000, 2000, "edge-tel-2")
        publish(broker, 1000, 2000)
        r = tel.result()
        t.eq((r["unique"], r["missing"], r["bad"]), (500, 0, 0), "after a reload: %r" % r)
        u = unit(g, "telemetry")
        t.eq((u["edge"]["received"], u["state"]), (1000, "running"), "the new unit's queue counts from zero")
        t.eq(len([x for x in json.loads(g.request("GET", "/units")[1])["units"] if x["name"] == "telemetry"]), 1,
             "listed once")
    finally:
        g.stop()
        if t.failed:
            print(g.log()[-4000:])


def test_drops(t, tmp, nats, broker):
    """A queue of 4 and batches of 1 (one barrier per reading) cannot keep up with a
    burst: what does not fit is dropped at once and counted; nothing else is lost."""
    g = Gust(tmp, conf_for(tmp, nats, broker, "edge_queue 4; batch 1;"))
    try:
        wait_for(lambda: "[source:sensors] subscribed to tele/#" in g.log(), 10, "mqtt_in subscribed")
        n = 5000
        publish(broker, n, 100000, conns=1)
        wait_for(lambda: unit(g, "telemetry")["edge"]["received"] == n, 20, "every reading handed over")
        wait_for(lambda: unit(g, "telemetry")["edge"]["queue_depth"] == 0, 20, "the queue drained")
        u = unit(g, "telemetry")
        t.check(u["edge"]["dropped"] > 0, "drops when the queue is full (%d)" % u["edge"]["dropped"])
        t.eq(u["events_ok"] + u["edge"]["dropped"], n, "handled + dropped = received")
        t.eq(u["edge"]["queue_capacity"], 4, "edge_queue")
        metrics = g.request("GET", "/metrics")[1].decode()
        t.check('gust_unit_edge_dropped_total{unit="telemetry",kind="flow",source="sensors"} %d'
                % u["edge"]["dropped"] in metrics, "drops in /metrics")
        t.check("[telemetry] edge queue full (4 messages): dropping what source 'sensors' sends (1 dropped so far"
                in g.log(), "the first drop is logged")
    finally:
        g.stop()
        if t.failed:
            print(g.log()[-4000:])


def test_config_errors(t, tmp, nats):
    head = "plugin_dir %s;\nplugin mqtt;\nnats { url %s; }\nhttp { listen 127.0.0.1:%d; }\n" % (
        os.path.join(BUILD, "plugins"), nats.url, free_port())
    src = "source s { use mqtt_in; broker 127.0.0.1:1; topic a; subject ev.a; qos 0; }\n"
    flow = "flow f { script %s/scripts/telemetry.lua; %%s }\n" % ROOT
    cases = [
        (src + flow % "edge nosuch;", 6, "flow 'f': edge 'nosuch': no unit of that name (it must name a `source` block)"),
        (src + flow % "edge s; source ev.a;", 6, "flow 'f': `edge` and `source` exclude each other"),
        (src + flow % "source ev.a;" + "flow g { script %s/scripts/telemetry.lua; edge f; }\n" % ROOT, 7,
         "flow 'g': edge 'f' is a flow"),
        (src + "detect d { rules %s/rules/device_window.vpl; edge s; edge_queue 0; }\n" % ROOT, 6,
         "edge_queue must be within 1..16777216 in detect 'd', not '0'"),
        (src + "sink k { use mqtt_out; source ev.a; broker 127.0.0.1:1; topic x; edge s; }\n", 6, "edge"),
        (src + "detect d { rules %s/tests/e2e/data/timer.vpl; edge s; }\n" % ROOT, 6,
         "the program has timer() streams, which the edge path cannot run"),
    ]
    for body, line, want in cases:
        path = tmp.file("edge.conf", head + body)
        p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True, timeout=30)
        t.eq(p.returncode, 1, "refused: " + want)
        t.check("%s:%d: " % (path, line) in p.stderr and want in p.stderr,
                "%r at line %d in %r" % (want, line, p.stderr[-400:]))
    path = tmp.file("edge.conf", head + src + flow % "edge s; edge_queue 1024;")
    p = subprocess.run([GUST, "-t", "-c", path], capture_output=True, text=True, timeout=30)
    t.eq(p.returncode, 0, "a flow with edge and no source is valid: " + p.stderr[-300:])


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    broker = Mosquitto(tmp)
    try:
        test_config_errors(t, tmp, nats)
        test_pipeline(t, tmp, nats, broker)
        test_drops(t, tmp, nats, broker)
    finally:
        broker.stop()
        nats.stop()
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
