"""The brokers users already run, through gust: for Kafka, Redis Streams and RabbitMQ,
messages/s through broker -> gust source -> JetStream -> gust sink -> broker (publish
before ack at both ends), against two ceilings measured in the same run:

- the broker's own: its tools moving the same messages broker to broker with no bus
  between (Kafka: kcat -C | kcat -P; Redis: gust-bench-redis-relay, XREADGROUP then
  pipelined XADDs, XACK once they are answered; RabbitMQ: gust-bench-amqp relay, consume,
  publish with confirms, ack once confirmed);
- the bus's own: gust-bench-bus bridge, the JetStream work of the same path with no
  broker (a publisher storing with as many PubAcks awaited as the source allows, a pull
  consumer reading and acking as a sink unit does).

Each path moves N messages {"id": i, "v": i*7} (the e2e tests' messages) waiting in a
fresh topic, stream or queue to a fresh one. Correctness first: every id must arrive at
the target exactly once (count and distinct) or the run fails and writes nothing. The
rate of a path through a broker is taken from the first message at the target to the
last, so start-up (a consumer group's join, a connection) is not in it. Kafka: a consumer
following the target (kcat -C) stamps each message as it reads it; Redis: the target's
entry ids (the server's clock at XADD); RabbitMQ: the target queue's depth polled every
5 ms (gust-bench-amqp watch). The bus's rate is its messages over its run. Rounds take turns (gust, the broker's relay, the
bus); medians are reported, with the ratio of gust to the lower ceiling (goal >= 0.8).

Sizes: bench/brokers.sh [N] [ROUNDS], or the environment (defaults in brackets): BROKERS
[kafka redis amqp] the brokers to run, BROKERS_N [20000] messages a path, BROKERS_ROUNDS
[3], BROKERS_BUS_SIZE [128] bytes a bus message (what a source stores: the message and its
headers). Prints one JSON object and
writes bench/results/brokers.json (bench/provenance.py)."""
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import provenance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
os.environ["GUST_BUILD_DIR"] = BUILD  # gustlib's tools (the Kafka mock, stream reader) from the same build
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from gustlib import Gust, KafkaMock, NatsServer, RabbitMQ, Redis, TempDir, wait_for  # noqa: E402

TOOLS = os.path.join(BUILD, "bench")
BUS = os.path.join(TOOLS, "gust-bench-bus")
AMQP = os.path.join(TOOLS, "gust-bench-amqp")
REDIS_RELAY = os.path.join(TOOLS, "gust-bench-redis-relay")
AMQP_TOOL = os.path.join(BUILD, "tests", "gust-amqp-tool")
PLUGINS = os.path.join(BUILD, "plugins")
BATCH = 256  # what gust's sink units fetch at once (the consumer core's default)
WAIT_S = 180  # the longest a path may take to deliver everything

CONF = """log_level warn;
plugin_dir %(plugins)s;
plugin %(plugin)s;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; }
%(units)s
"""


class Failed(Exception):
    """A check failed: the run's figures do not stand."""


def check_ids(ids, n, what):
    """Every id 0..n-1 at the target exactly once."""
    distinct = set(ids)
    if len(ids) != n or distinct != set(range(n)):
        raise Failed("%s: %d messages at the target, %d distinct, %d of the %d sent missing" % (
            what, len(ids), len(distinct), len(set(range(n)) - distinct), n))


def rate_between(n, first, last):
    """n messages from the first arrival to the last (seconds): the n - 1 after the first."""
    return round((n - 1) / (last - first)) if last > first else None


def run(args, what, timeout=WAIT_S, **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    if p.returncode != 0:
        raise Failed("%s: exit %d: %s" % (what, p.returncode, p.stderr.strip()[-500:]))
    return p.stdout


def cpu_seconds(pid):
    """User + system CPU of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def poll(cond, what):
    """Waits for cond, asking 20 times a second (not more: the asking takes CPU from what
    is measured)."""
    deadline = time.monotonic() + WAIT_S
    while not cond():
        if time.monotonic() > deadline:
            raise Failed("timed out waiting for " + what)
        time.sleep(0.05)


def bus_bridge(nats, n, name, size, window):
    """The bus alone on the same path (gust-bench-bus bridge): its rate."""
    out = run([BUS, nats.url, "bridge", str(BATCH), str(n), name, str(size), str(window)], "gust-bench-bus bridge")
    r = json.loads(out)
    if not r.get("ok"):
        raise Failed("gust-bench-bus bridge: %s" % out)
    return r["rate"]


def messages(n):
    return [{"id": i, "v": i * 7} for i in range(n)]


# ---- the three brokers: how each is filled, relayed, bridged by gust and read back ----
#
# Each has: name; window (what its source publishes before awaiting PubAcks, by default:
# the bus ceiling's window); tool (its relay, for the results); load(queue, n);
# target(queue); watch(queue, n) -> what arrivals() needs (started before a path runs);
# relay(src, dst, n) (returns once all n are at dst); units(src, dst, tag) (gust's pair);
# delivered(watch, dst) (how many the target holds, cheaply: it is asked 20 times a
# second while gust runs); arrivals(watch, dst, n, what) -> the rate, after checking
# every id is there once; close().

class KafkaFollower:
    """kcat -C following a topic from its start, each message's arrival stamped as it is
    read: once the broker has it and a consumer can see it. (The messages' own timestamps
    would not do: a producer sets them when it is handed a message, and kcat -P is handed
    them all long before the broker has them.) Ready once it has reached the end of every
    partition."""

    def __init__(self, bootstrap, topic, partitions):
        self.proc = subprocess.Popen(["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-u",
                                      "-X", "fetch.wait.max.ms=5", "-X", "enable.partition.eof=true", "-f", "%o\\n"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.times, self.eofs = [], 0
        threading.Thread(target=self._read_err, daemon=True).start()
        threading.Thread(target=self._read_out, daemon=True).start()
        wait_for(lambda: self.eofs >= partitions or self.proc.poll() is not None, 30, "kcat following " + topic)
        if self.proc.poll() is not None:
            raise Failed("kcat -C on %s exited with %s" % (topic, self.proc.returncode))

    def _read_err(self):
        for line in self.proc.stderr:
            self.eofs += "Reached end of topic" in line

    def _read_out(self):
        for _ in self.proc.stdout:
            self.times.append(time.monotonic())

    def rate(self, n, what):
        wait_for(lambda: len(self.times) >= n, WAIT_S, "%s: kcat -C to read %d" % (what, n))
        return rate_between(n, self.times[0], self.times[n - 1])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Kafka:
    """gust-kafka-mock (librdkafka's mock cluster over TCP: Kafka has no Debian server),
    topics of 3 partitions keyed by id. Arrival: when a consumer following the target
    reads each message (KafkaFollower)."""
    name, window, plugin = "kafka", 1024, "kafka"  # kafka_in's max_inflight

    def __init__(self, tmp):
        self.kafka = KafkaMock(tmp)
        out = subprocess.run(["kcat", "-V"], capture_output=True, text=True).stdout
        version = next((line.split()[1] for line in out.splitlines() if line.startswith("Version ")), "unknown")
        self.tool = "kcat -C | kcat -P (kcat %s)" % version

    def load(self, topic, n):
        self.kafka.cmd("topic %s 3" % topic)
        self.kafka.produce(topic, [(str(m["id"]), json.dumps(m)) for m in messages(n)])

    def target(self, topic):
        self.kafka.cmd("topic %s 3" % topic)

    def watch(self, topic, n):
        return KafkaFollower(self.kafka.bootstrap, topic, 3)

    def relay(self, src, dst, n):
        b = self.kafka.bootstrap
        run(["bash", "-c", "set -o pipefail; kcat -C -b %s -t %s -o beginning -e -q -f '%%k\\t%%s\\n' | "
             "kcat -P -b %s -t %s -K '\\t'" % (b, src, b, dst)], "kcat -C | kcat -P")

    def units(self, src, dst, tag):
        return ("source kin_%(t)s { use kafka_in; brokers %(b)s; topics %(src)s; group bench_%(t)s; "
                "subject ev.bench.%(t)s; competing on; }\n"
                "sink kout_%(t)s { use kafka_out; source ev.bench.%(t)s; brokers %(b)s; topic %(dst)s; "
                "key \"{payload.id}\"; }" % {"t": tag, "b": self.kafka.bootstrap, "src": src, "dst": dst})

    def delivered(self, watch, topic):
        return len(watch.times)

    def arrivals(self, watch, topic, n, what):
        rate = watch.rate(n, what)
        check_ids(self.kafka.ids(topic), n, what)
        return rate

    def close(self):
        self.kafka.stop()


class RedisStreams:
    """A real redis-server. Arrival: the target's entry ids (the server's clock at XADD)."""
    name, window, plugin = "redis", 1024, "redis"  # redis_in's max_inflight
    tool = "gust-bench-redis-relay (XREADGROUP, pipelined XADD, XACK)"

    def __init__(self, tmp):
        self.redis = Redis(tmp)

    def load(self, stream, n):
        self.redis.xadd_many(stream, 0, n)

    def target(self, stream):
        pass

    def watch(self, stream, n):
        return None

    def relay(self, src, dst, n):
        run([REDIS_RELAY, "127.0.0.1", str(self.redis.port), src, dst, str(n)], "gust-bench-redis-relay")

    def units(self, src, dst, tag):
        return ("source rin_%(t)s { use redis_in; url %(u)s; stream %(src)s; group gust; subject ev.bench.%(t)s; "
                "competing on; }\n"
                "sink rout_%(t)s { use redis_out; source ev.bench.%(t)s; url %(u)s; stream %(dst)s; }"
                % {"t": tag, "u": self.redis.url, "src": src, "dst": dst})

    def delivered(self, watch, stream):
        return self.redis.cmd("XLEN", stream)

    def arrivals(self, watch, stream, n, what):
        entries = self.redis.cmd("XRANGE", stream, "-", "+") or []
        ids, stamps = [], []
        for entry_id, fields in entries:
            ids.append(json.loads(dict(zip(fields[0::2], fields[1::2]))["data"])["id"])
            stamps.append(int(entry_id.split("-")[0]))
        check_ids(ids, n, what)
        return rate_between(n, min(stamps) / 1e3, max(stamps) / 1e3)

    def close(self):
        self.redis.stop()


class Rabbit:
    """A real rabbitmq-server. Arrival: the target queue's depth, polled every 5 ms on one
    connection by gust-bench-amqp watch; read back (and emptied) with gust-amqp-tool get."""
    name, window, plugin = "amqp", 256, "amqp"  # amqp_in's prefetch
    tool = "gust-bench-amqp relay (consume, publish with confirms, ack once confirmed)"

    def __init__(self, tmp):
        self.rmq = RabbitMQ(tmp)

    def load(self, queue, n):
        run([AMQP_TOOL, self.rmq.url, "publish", queue, str(n)], "gust-amqp-tool publish")

    def target(self, queue):
        run([AMQP_TOOL, self.rmq.url, "declare", queue, "durable"], "gust-amqp-tool declare")

    def watch(self, queue, n):
        return subprocess.Popen([AMQP, self.rmq.url, "watch", queue, str(n), str(WAIT_S)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def relay(self, src, dst, n):
        run([AMQP, self.rmq.url, "relay", src, dst, str(n)], "gust-bench-amqp relay")

    def units(self, src, dst, tag):
        return ("source ain_%(t)s { use amqp_in; url %(u)s; queue %(src)s; subject ev.bench.%(t)s; competing on; }\n"
                "sink aout_%(t)s { use amqp_out; source ev.bench.%(t)s; url %(u)s; exchange \"\"; "
                "routing_key %(dst)s; }" % {"t": tag, "u": self.rmq.url, "src": src, "dst": dst})

    def delivered(self, watch, queue):
        return float("inf") if watch.poll() is not None else 0  # the watch ends once the queue holds them all

    def arrivals(self, watch, queue, n, what):
        out, err = watch.communicate(timeout=WAIT_S)
        if watch.returncode != 0:
            raise Failed("%s: gust-bench-amqp watch: %s" % (what, err.strip()))
        w = json.loads(out)
        got = run([AMQP_TOOL, self.rmq.url, "get", queue], "gust-amqp-tool get").splitlines()
        check_ids([json.loads(line.split("\t", 4)[4])["id"] for line in got], n, what)
        return rate_between(n - w["first_count"] + 1, w["first_s"], w["done_s"])

    def close(self):
        self.rmq.close()


BROKERS = {"kafka": Kafka, "redis": RedisStreams, "amqp": Rabbit}


# ---- a round of one broker: gust, the broker's relay, the bus ----

def stop_watch(w):
    if isinstance(w, KafkaFollower):
        w.stop()
    elif w is not None and w.poll() is None:
        w.kill()
        w.wait()


def path_through_gust(b, tmp, nats, n, tag):
    """The broker's messages through gust (a fresh source and sink): the rate, and gust's
    CPU seconds over the run."""
    src, dst = "gin_" + tag, "gout_" + tag
    b.load(src, n)
    b.target(dst)
    w = b.watch(dst, n)
    try:
        g = Gust(tmp, CONF % {"plugins": PLUGINS, "plugin": b.plugin, "nats": nats.url,
                              "units": b.units(src, dst, tag)})
        try:
            poll(lambda: b.delivered(w, dst) >= n, "%s: gust: %d messages at the target" % (b.name, n))
            cpu = cpu_seconds(g.proc.pid)
        except Failed as e:
            raise Failed("%s; gust's log ends:\n%s" % (e, g.log()[-2000:]))
        finally:
            g.stop()
        return b.arrivals(w, dst, n, "%s: gust" % b.name), cpu
    finally:
        stop_watch(w)


def path_through_relay(b, n, tag):
    """The same messages moved by the broker's own relay: the rate."""
    src, dst = "rin_" + tag, "rout_" + tag
    b.load(src, n)
    b.target(dst)
    w = b.watch(dst, n)
    try:
        b.relay(src, dst, n)
        return b.arrivals(w, dst, n, "%s: the broker's relay" % b.name)
    finally:
        stop_watch(w)


def versions():
    def first_line(args):
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=30)
            return (p.stdout or p.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "unknown"
    pkg = lambda name: first_line(["dpkg-query", "-W", "-f", "${Version}", name])  # noqa: E731
    return {"nats_server": first_line(["nats-server", "--version"]), "redis_server": pkg("redis-server"),
            "rabbitmq_server": pkg("rabbitmq-server"), "librdkafka": pkg("librdkafka1"),
            "librabbitmq": pkg("librabbitmq4"), "hiredis": pkg("libhiredis0.14")}


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def main():
    args = sys.argv[1:]
    names = os.environ.get("BROKERS", "kafka redis amqp").split()
    try:
        n = int(args[0] if args else os.environ.get("BROKERS_N", "20000"))
        rounds = int(args[1] if len(args) > 1 else os.environ.get("BROKERS_ROUNDS", "3"))
    except ValueError:
        n = rounds = 0
    if len(args) > 2:
        n = 0
    size = int(os.environ.get("BROKERS_BUS_SIZE", "128"))
    unknown = [b for b in names if b not in BROKERS]
    if unknown or n < 2 or rounds < 1 or size < 41:
        sys.exit("usage: bench/brokers.sh [N=20000] [ROUNDS=3]: N >= 2 messages a path, ROUNDS >= 1; BROKERS takes "
                 "%s%s; BROKERS_BUS_SIZE >= 41" % (" ".join(BROKERS), " (not %s)" % " ".join(unknown) if unknown else ""))
    for tool in (BUS, AMQP, REDIS_RELAY, AMQP_TOOL):
        if not os.access(tool, os.X_OK):
            sys.exit("brokers: missing %s: build first (./build.sh build)" % tool)
    started = provenance.start()
    t0 = time.monotonic()
    tmp = TempDir()
    nats = NatsServer(tmp)
    doc = {"scenario": "brokers",
           "what": "broker -> gust source -> JetStream -> gust sink -> broker, against the broker's own relay and "
                   "the bus alone on the same path",
           "messages": n, "rounds": rounds, "statistic": "median of rounds", "bus_message_bytes": size,
           "machine": provenance.machine(), "versions": versions(), "target_ratio": 0.8}
    error = None
    try:
        for name in names:
            tb = time.monotonic()
            b = BROKERS[name](tmp)
            res = {"gust": [], "gust_cpu_us_per_msg": [], "broker": [], "bus": []}
            try:
                for r in range(1, rounds + 1):
                    tag = "%s%d" % (name, r)
                    rate, cpu = path_through_gust(b, tmp, nats, n, tag)
                    res["gust"].append(rate)
                    res["gust_cpu_us_per_msg"].append(round(cpu / n * 1e6, 1))
                    res["broker"].append(path_through_relay(b, n, tag))
                    res["bus"].append(bus_bridge(nats, n, "BRIDGE_" + tag.upper(), size, b.window))
                    print("brokers: %s round %d: gust %s/s, the broker's relay %s/s, the bus %s/s" % (
                        name, r, res["gust"][-1], res["broker"][-1], res["bus"][-1]), file=sys.stderr, flush=True)
            finally:
                b.close()
            g, broker, bus = median(res["gust"]), median(res["broker"]), median(res["bus"])
            if None in (g, broker, bus):
                raise Failed("%s: every message arrived within a millisecond: too few to time (BROKERS_N)" % name)
            lower = min(broker, bus)
            doc[name] = {"rate_median": g, "rates": res["gust"],
                         "gust_cpu_us_per_msg_median": median(res["gust_cpu_us_per_msg"]),
                         "broker_ceiling": {"tool": b.tool, "rate_median": broker, "rates": res["broker"]},
                         "bus_ceiling": {"tool": "gust-bench-bus bridge %d N NAME %d %d" % (BATCH, size, b.window),
                                         "window": b.window, "rate_median": bus, "rates": res["bus"]},
                         "lower_ceiling": "broker" if broker <= bus else "bus",
                         "ratio_to_lower_ceiling": round(g / lower, 3),
                         "every_id_once": True, "seconds": round(time.monotonic() - tb, 1)}
            doc[name]["met"] = doc[name]["ratio_to_lower_ceiling"] >= doc["target_ratio"]
    except (Failed, AssertionError, subprocess.SubprocessError, OSError, ValueError, KeyError) as e:
        error = "%s: %s" % (type(e).__name__, e)
    finally:
        nats.stop()
        tmp.cleanup()
    doc["seconds_total"] = round(time.monotonic() - t0, 1)
    doc["ok"] = error is None
    if error:
        doc["error"] = error
    provenance.emit("brokers", doc, BUILD, started, ok=error is None)
    if error:
        sys.exit("brokers: " + error)


if __name__ == "__main__":
    main()
