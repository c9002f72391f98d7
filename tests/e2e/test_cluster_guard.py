"""The split-brain guard: with `cluster on;` each process advertises which units it runs
(a digest of its unit blocks and the contents of their scripts and rules) in the lease
bucket, and POST /reload refuses with 409 a change that no live peer runs, unless forced;
the nodes after the first of a rolling change follow freely. A DLQ purge (shared state)
is never refused, SIGHUP is not refused, and a change outside the units goes through."""
import json
import os
import signal

from gustlib import ADMIN_TOKEN_CONF, Checks, Gust, NatsServer, TempDir, nats_publish, wait_for

FLOW = """
return {
  on_event = function(ev)
    emit("ev.done", { id = ev.id, by = "%s" })
  end,
}
"""

CONF = """
node_name %(node)s;
cluster on;
log_level %(level)s;
http { listen 127.0.0.1:@PORT@; %(admin)s }
nats { url %(url)s; lease_ttl 3s; lease_poll 200ms; }
flow work { script %(script)s; source ev.work; }
"""


class Node:
    """One clustered gust with its own copy of the script, at a path of its own."""

    def __init__(self, nats, name, version="v1"):
        self.tmp = TempDir()
        self.name = name
        self.url = nats.url
        self.script = os.path.join(self.tmp.path, "scripts-%s" % name, "work.lua")
        os.makedirs(os.path.dirname(self.script))
        self.write_script(version)
        self.gust = Gust(self.tmp, self.conf("info"))

    def conf(self, level):
        return CONF % {"node": self.name, "url": self.url, "script": self.script, "level": level,
                       "admin": ADMIN_TOKEN_CONF}

    def write_script(self, version):
        with open(self.script, "w") as f:
            f.write(FLOW % version)

    def write_conf(self, level):
        with open(self.gust.conf, "w") as f:
            f.write(self.conf(level).replace("@PORT@", str(self.gust.port)))

    def units(self):
        status, body, _ = self.gust.request("GET", "/units")
        assert status == 200, body
        return json.loads(body)

    def nodes(self):
        return self.units()["cluster"]["nodes"]

    def reload(self, query=""):
        status, body, _ = self.gust.request("POST", "/reload" + query)
        return status, json.loads(body)


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    a = b = None
    try:
        a = Node(nats, "node-a")
        b = Node(nats, "node-b")
        config = a.nodes()["config"]
        t.check(len(config) == 16, "node-a advertises a digest: %r" % config)
        t.eq(b.nodes()["config"], config, "the same script at another path: the same units")
        wait_for(lambda: [p["name"] for p in a.nodes()["peers"]] == ["node-b"], 10, "node-a sees node-b")
        t.eq(a.nodes()["peers"][0]["config"], config, "node-a sees node-b run its units")

        # A change outside the units (log_level) is no split: it goes through.
        a.write_conf("warn")
        generation = a.units()["generation"]
        t.eq(a.reload()[0], 202, "a reload that leaves the units as they are is accepted")
        wait_for(lambda: a.units()["generation"] == generation + 1, 10, "node-a reloaded")
        t.eq(a.nodes()["config"], config, "the units' digest did not change")

        # node-a's script changes and no peer runs the new one: refused, nothing reloaded.
        a.write_script("v2")
        generation = a.units()["generation"]
        status, body = a.reload()
        t.eq(status, 409, "a reload to units no peer runs is refused")
        t.check("no peer runs them" in body.get("error", "") and "node-b" in body.get("error", ""),
                "the refusal says why and names the peer: %s" % body)
        t.eq(a.units()["generation"], generation, "the refused reload did not happen")
        nats_publish(nats.port, [("ev.work", json.dumps({"id": i}).encode()) for i in range(20)])
        wait_for(lambda: len([m for m in nats.read_stream() if m[1] == "ev.done"]) >= 20, 10, "events handled")
        versions = {json.loads(m[2])["by"] for m in nats.read_stream() if m[1] == "ev.done"}
        t.eq(versions, {"v1"}, "both nodes still run the old script")

        # A DLQ purge is shared state, never a split.
        status, _, _ = a.gust.request("POST", "/dlq/purge?unit=work")
        t.eq(status, 200, "a DLQ purge on a clustered node is accepted")

        # The first node of a rolling change is forced; the next follows freely.
        status, _ = a.reload("?force=1")
        t.eq(status, 202, "a forced reload is accepted")
        wait_for(lambda: a.units()["generation"] == generation + 1, 10, "node-a reloaded when forced")
        v2 = a.nodes()["config"]
        t.check(v2 != config, "node-a advertises its new units")
        t.check("reload forced" in a.gust.log(), "the forced reload is logged")
        wait_for(lambda: [p["config"] for p in b.nodes()["peers"]] == [v2], 10, "node-b sees node-a's new units")
        t.check("they handle events differently" in a.gust.log() + b.gust.log(),
                "the drift while the change rolls out is logged")
        b.write_script("v2")
        generation_b = b.units()["generation"]
        t.eq(b.reload()[0], 202, "node-b may follow: node-a runs those units already")
        wait_for(lambda: b.units()["generation"] == generation_b + 1, 10, "node-b reloaded")
        t.eq(b.nodes()["config"], v2, "both nodes run the same units again")

        # SIGHUP is the operator's own lever: not refused.
        b.write_script("v3")
        b.gust.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: b.units()["generation"] == generation_b + 2, 10, "SIGHUP reloads node-b")

        # A peer that stops cleanly leaves the directory: no peer, nothing to differ from.
        t.eq(b.gust.stop(), 0, "node-b stops cleanly")
        wait_for(lambda: a.nodes()["peers"] == [], 10, "node-b's entry is gone")
        a.write_script("v4")
        t.eq(a.reload()[0], 202, "alone in the cluster, node-a reloads freely")
    finally:
        for n in (a, b):
            if n is not None and n.gust.proc.poll() is None:
                n.gust.proc.kill()
                n.gust.proc.wait(10)
        nats.stop()
        if t.failed:
            for n in (a, b):
                if n is not None:
                    print("--- %s log ---\n%s" % (n.name, n.gust.log()[-3000:]))
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
