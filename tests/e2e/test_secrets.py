"""Secrets from a store (issue 31, items 1-3): {secret:PATH#KEY} references, rotation,
GET /secrets.

- Vault KV v2 (a fake of ours over HTTPS, checked with vault_ca: Vault is not in Debian)
  with refresh 1s: an http_out sink's
  Authorization header built from {secret:crm/api#token} reaches our own far end with the
  stored value; the value changed in the fake Vault is in force for the next request with
  no reload. A second sink naming a secret Vault does not hold does not start, and
  /healthz (503) and /secrets name it and its reference, while the first one runs.
- A Vault that refuses the token keeps the last value in force (the error in /secrets); a
  new token in vault_token_file is read at SIGHUP.
- The file store, rotated by a SIGHUP; the env store, also into a source's secret key
  that is not a template (http_poll's header), replaced when the unit starts.
- secret("PATH#KEY") in a flow, at load; a flow naming a missing secret does not start.
- No output of the test (/secrets, /healthz, /events, /units, error bodies, the log)
  holds a value or a prefix of one."""
import json
import os
import signal

from gustlib import BUILD, Checks, FarEnd, Gust, NatsServer, TempDir, kill_all, make_certs, wait_for

PLUGINS = os.path.join(BUILD, "plugins")
TOKENS = ["vault-token-7f3a", "vault-token-8e4b"]
VALUES = ["Tk1-alpha-93f1", "Tk2-bravo-5c0e", "Tk3-file-11aa", "Tk4-file-22bb", "Tk5-env-33cc", "Tk6-poll-44dd",
          "Tk7-charlie-6a2f"]

CONF = """
plugin_dir %(plugins)s;
plugin http_out;
plugin http_poll;
http { listen 127.0.0.1:@PORT@; }
nats { url %(nats)s; max_deliver 2; retry_delay 100ms; }
secrets { %(store)s }
sink crm { use http_out; source ev.crm; url http://127.0.0.1:%(far)d/hit;
           header Authorization "Bearer {secret:crm/api#token}"; }
%(extra)s
"""
MISSING = """sink other { use http_out; source ev.other; url http://127.0.0.1:%d/other;
             header X-Key "{secret:crm/missing#token}"; }
flow lua { script %s; source ev.luain; }
flow luabad { script %s; source ev.luabad; }"""
# secret() at load; the flow tells whether it got the stored value, never the value itself.
LUA = """local K = secret("crm/api#token")
return { on_event = function(ev) emit("ev.crm", { lua_ok = (K == "%s") }) end }
""" % VALUES[0]
LUA_BAD = """local K = secret("crm/lua#none")
return { on_event = function(ev) end }
"""


class FakeVault:
    """KV v2 reads over HTTPS: GET /v1/secret/data/PATH with X-Vault-Token; the value at
    data.data.KEY."""

    def __init__(self, certs):
        self.data = {"crm/api": {"token": VALUES[0]}}
        self.reads = 0
        self.token = TOKENS[0]

        def handle(req):
            js = {"Content-Type": "application/json"}
            if req.headers.get("X-Vault-Token") != self.token:
                return 403, b'{"errors":["permission denied"]}', js
            prefix = "/v1/secret/data/"
            path = req.path[len(prefix):] if req.path.startswith(prefix) else None
            self.reads += 1
            if path not in self.data:
                return 404, b'{"errors":[]}', js
            return 200, json.dumps({"data": {"data": self.data[path], "metadata": {"version": 1}}}).encode(), js

        self.srv = FarEnd(handle, certs)
        self.port = self.srv.port


class Recorder(FarEnd):
    """The far end of the sinks and the poll: who authorized each request."""

    @property
    def bodies(self):
        return [r.body for r in self.requests()]

    def got(self, value):
        return any((r.headers.get("Authorization") or r.headers.get("X-Poll")) == "Bearer " + value
                   for r in self.requests())


def main():
    t = Checks()
    tmp = TempDir()
    nats = NatsServer(tmp)
    certs = make_certs(tmp)
    vault, far = FakeVault(certs), Recorder()
    outputs = []  # every text the test read from gust
    procs = []

    def req(g, method, path, body=None):
        st, out, _ = g.request(method, path, body)
        outputs.append(out.decode(errors="replace"))
        return st, out

    def deliver(g, value, n):
        st, _ = req(g, "POST", "/ingest/crm", json.dumps({"id": n}))
        t.eq(st, 202, "ingest %d" % n)
        wait_for(lambda: far.got(value), 20, "Authorization: Bearer <secret %d> at the far end" % n)

    def start(store, extra="", env=None):
        g = Gust(tmp, CONF % {"plugins": PLUGINS, "nats": nats.url, "store": store, "far": far.port,
                              "extra": extra}, wait_healthy=False, env=env)
        procs.append(g)
        return g

    try:
        # Vault, refresh 1s; one sink's secret is not in Vault.
        tokf = tmp.file("vault.token", TOKENS[0] + "\n")
        g = start("vault_addr https://127.0.0.1:%d; vault_token_file %s; vault_ca %s; vault_mount secret; "
                  "refresh 1s;" % (vault.port, tokf, certs["ca"]),
                  MISSING % (far.port, tmp.file("lua.lua", LUA), tmp.file("bad.lua", LUA_BAD)))

        def only_secret_cause():
            try:
                st, out = req(g, "GET", "/healthz")
            except OSError:
                return False  # not listening yet
            causes = json.loads(out).get("causes", [])
            return st == 503 and {c["cause"] for c in causes} == {"secret_unresolved"} and causes
        causes = wait_for(only_secret_cause, 20, "/healthz 503 with only secret_unresolved")
        blocked = {c.get("unit"): c["detail"] for c in causes}
        t.eq(sorted(blocked), ["luabad", "other"], "/healthz names the units")
        t.check("crm/missing#token" in blocked.get("other", ""), "/healthz names the reference: %r" % causes)
        t.check("crm/lua#none" in blocked.get("luabad", ""), "/healthz names the flow's reference: %r" % causes)

        deliver(g, VALUES[0], 1)
        t.eq(req(g, "POST", "/ingest/luain", "{}")[0], 202, "ingest to the flow")
        wait_for(lambda: any(b'"lua_ok":true' in b.replace(b" ", b"") for b in far.bodies), 20,
                 "the flow's secret() gave the stored value")
        vault.data["crm/api"]["token"] = VALUES[1]
        reads = vault.reads
        wait_for(lambda: vault.reads >= reads + 2, 15, "a refresh reads Vault again")
        deliver(g, VALUES[1], 2)
        t.check("reload" not in g.log().lower(), "rotation needs no reload")

        # A new Vault token: refused until read again from vault_token_file at SIGHUP; the
        # last value stays in force meanwhile, /secrets shows the error.
        vault.token = TOKENS[1]
        vault.data["crm/api"]["token"] = VALUES[6]

        def api_entry():
            return {s["ref"]: s for s in json.loads(req(g, "GET", "/secrets")[1])["secrets"]}["crm/api#token"]
        e = wait_for(lambda: "403" in (api_entry()["error"] or "") and api_entry(), 15, "the refused token in /secrets")
        t.eq(e["resolved"], True, "the last value stays in force through a refusal")
        tmp.file("vault.token", TOKENS[1] + "\n")
        g.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: json.loads(req(g, "GET", "/units")[1]).get("reload_count") == 1, 20, "the reload done")
        deliver(g, VALUES[6], 6)

        st, out = req(g, "GET", "/secrets")
        t.eq(st, 200, "GET /secrets")
        sec = json.loads(out)
        by_ref = {s["ref"]: s for s in sec["secrets"]}
        t.eq(sorted(by_ref), ["crm/api#token", "crm/lua#none", "crm/missing#token"], "/secrets lists every reference")
        t.eq(by_ref["crm/api#token"]["resolved"], True, "crm/api#token resolved")
        t.check(by_ref["crm/api#token"]["resolved_at"] is not None, "resolved_at given")
        t.eq(by_ref["crm/api#token"]["store"], "vault", "its store")
        t.eq(by_ref["crm/missing#token"]["resolved"], False, "crm/missing#token not resolved")
        t.check("404" in (by_ref["crm/missing#token"]["error"] or ""), "its error: %r" % by_ref["crm/missing#token"])
        t.eq(sorted(b["unit"] for b in sec["blocked_units"]), ["luabad", "other"], "/secrets names the blocked units")
        st, out = req(g, "GET", "/units")
        units = [u["name"] for u in json.loads(out)["units"]]
        t.check("crm" in units and "lua" in units and "other" not in units and "luabad" not in units,
                "crm and lua run, other and luabad do not: %r" % units)
        req(g, "GET", "/events")
        req(g, "GET", "/events?unit=crm")
        req(g, "POST", "/secrets")  # an error body
        req(g, "GET", "/nowhere")
        t.eq(g.stop(), 0, "gust exits cleanly")

        # The file store, rotated by a SIGHUP (refresh 1h: only the reload refetches).
        sf = tmp.file("secrets.json", json.dumps({"crm/api": {"token": VALUES[2]}}))
        g = start("file %s; refresh 1h;" % sf)
        wait_for(g.healthy, 20, "file store: healthy")
        deliver(g, VALUES[2], 3)
        tmp.file("secrets.json", json.dumps({"crm/api": {"token": VALUES[3]}}))
        g.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: json.loads(req(g, "GET", "/units")[1]).get("reload_count") == 1, 20, "the reload done")
        deliver(g, VALUES[3], 4)
        req(g, "GET", "/secrets")
        t.eq(g.stop(), 0, "gust exits cleanly")

        # The env store.
        # The env store; a source's secret key (http_poll's header: not a template) gets
        # the value when the unit starts.
        poll = """source poll { use http_poll; url http://127.0.0.1:%d/poll; subject ev.polled; interval 300ms;
                                header "X-Poll: Bearer {secret:poll/api#token}"; }""" % far.port
        g = start("env on;", poll,
                  env={"GUST_SECRET_CRM_API_TOKEN": VALUES[4], "GUST_SECRET_POLL_API_TOKEN": VALUES[5]})
        wait_for(g.healthy, 20, "env store: healthy")
        deliver(g, VALUES[4], 5)
        wait_for(lambda: far.got(VALUES[5]), 20, "the poll's header carries the env secret")
        st, out = req(g, "GET", "/secrets")
        t.eq([s["resolved"] for s in json.loads(out)["secrets"]], [True, True], "env: resolved")
        t.eq(g.stop(), 0, "gust exits cleanly")

        for g in procs:
            outputs.append(g.log())
        for v in VALUES + TOKENS:
            for prefix in (v, v[:6]):
                t.check(not any(prefix in o for o in outputs), "%r appears in an output of gust" % prefix)
    except BaseException:
        t.failed += 1
        raise
    finally:
        kill_all(procs, nats, failed=t.failed > 0)
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
