"""POST /mcp, against a real nats-server: the official MCP TypeScript SDK client
(tests/e2e/mcp_client, installed with `npm ci` into the build directory) connects over
Streamable HTTP with the admin token, lists the tools, calls gust_units, gust_vpl_check
on a broken program (an error with line:col) and gust_flow_test (the emits); without the
token it is refused. Then, in Python: JSON-RPC errors (-32700, -32600, -32601, -32602)
and a batch mixing a ping, a notification, an unknown method and a tool that runs on the
admin worker (gust_dlq_list), answered in one array; gust stays up throughout."""
import json
import os
import shutil
import subprocess
import sys
import threading
import time

from gustlib import ADMIN_TOKEN, ADMIN_TOKEN_CONF, BUILD, GUST, SANITIZED, Checks, Gust, NatsServer, TempDir

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_SRC = os.path.join(HERE, "mcp_client")

FLOW = """
return { on_event = function(ev) emit("ev.orders.out", { id = ev.id, twice = ev.n * 2 }) end }
"""

READ_TOKEN = "mcp-read-only-3f9a"

CONF = """
http { listen 127.0.0.1:@PORT@; %s admin_read_token_env GUST_MCP_READ; }
nats { url %%(url)s; }
flow orders { script %%(script)s; source ev.orders; }
""" % ADMIN_TOKEN_CONF

BROKEN_VPL = """connector Bus = nats (url: "x")
event Reading:
    v: int
stream R = Reading.from(Bus, topic: "ev.r")
stream Bad = R.where(v >>> 3)
"""

TOOLS = {"gust_topology", "gust_units", "gust_events", "gust_dlq_list", "gust_dlq_replay", "gust_dlq_purge",
         "gust_vpl_check", "gust_flow_test", "gust_replay", "gust_reload", "gust_language"}


def install_client():
    """The SDK client, installed from the committed lock file. A failure is the test's."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        sys.exit("FAIL: node and npm are needed for the MCP SDK client (Debian: apt-get install nodejs npm)")
    dest = os.path.join(BUILD, "mcp_client")
    os.makedirs(dest, exist_ok=True)
    for name in ("package.json", "package-lock.json", "client.mjs"):
        shutil.copy(os.path.join(CLIENT_SRC, name), dest)
    p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=dest, capture_output=True,
                       text=True, timeout=240)
    if p.returncode != 0:
        sys.exit("FAIL: npm ci of @modelcontextprotocol/sdk failed (is the npm registry reachable?):\n%s%s" %
                 (p.stdout, p.stderr))
    return dest


def rpc(g, body, token=None):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = "Bearer " + token
    status, data, _ = g.request("POST", "/mcp", body=body if isinstance(body, (str, bytes)) else json.dumps(body),
                                headers=headers)
    return status, json.loads(data) if data else None


def error_code(doc):
    return doc.get("error", {}).get("code") if isinstance(doc, dict) else None


def main():
    t = Checks()
    client = install_client()
    tmp = TempDir()
    nats = NatsServer(tmp)
    g = None
    try:
        g = Gust(tmp, CONF % {"url": nats.url, "script": tmp.file("orders.lua", FLOW)},
                 env={"GUST_MCP_READ": READ_TOKEN})
        cases = tmp.file("cases.json", json.dumps({
            "broken_vpl": BROKEN_VPL,
            "flow_test": {"script": FLOW, "events": [{"id": "a", "n": 2}, {"id": "b", "n": 5}, {"id": "c"}]},
        }))
        url = "http://127.0.0.1:%d/mcp" % g.port
        p = subprocess.run(["node", os.path.join(client, "client.mjs"), url, ADMIN_TOKEN, cases], cwd=client,
                           capture_output=True, text=True, timeout=120)
        t.eq(p.returncode, 0, "the SDK client ran (stderr: %s)" % p.stderr[-2000:])
        out = json.loads(p.stdout) if p.returncode == 0 else {}
        t.eq((out.get("server") or {}).get("name"), "gust", "serverInfo")
        names = {x["name"] for x in out.get("tools", [])}
        t.eq(names, TOOLS, "tools/list")
        schemas = {x["name"]: x["schema"] for x in out.get("tools", [])}
        t.eq(schemas.get("gust_flow_test", {}).get("required"), ["script", "events"], "gust_flow_test's schema")
        units = out.get("units", {})
        t.check(not units.get("isError") and any(u.get("name") == "orders"
                                                 for u in json.loads(units.get("text", "{}")).get("units", [])),
                "gust_units lists the flow: %r" % units)
        vpl = json.loads(out.get("vpl", {}).get("text", "{}"))
        err = (vpl.get("errors") or [{}])[0]
        t.check(vpl.get("ok") is False and err.get("line") == 5 and err.get("col", 0) > 0 and
                err.get("message", "").startswith("5:%d:" % err.get("col", 0)),
                "gust_vpl_check: an error at 5:col: %r" % vpl)
        flow = json.loads(out.get("flow", {}).get("text", "{}"))
        res = flow.get("results", [])
        t.eq([[e["payload"] for e in r.get("emits", [])] for r in res],
             [[{"id": "a", "twice": 4}], [{"id": "b", "twice": 10}], []], "gust_flow_test's emits")
        t.check(len(res) == 3 and "error" in res[2] and "error" not in res[0], "gust_flow_test: the third fails")
        anon = out.get("anonymous", {})
        t.check(anon.get("connected") is False and "missing bearer token" in anon.get("error", ""),
                "without the token the client is refused: %r" % anon)

        # JSON-RPC errors, in Python.
        status, doc = rpc(g, "{not json")
        t.check(status == 400 and error_code(doc) == -32700 and doc.get("id") is None, "parse error: %r" % doc)
        status, doc = rpc(g, [])
        t.eq(error_code(doc), -32600, "empty batch")
        status, doc = rpc(g, {"jsonrpc": "1.0", "id": 1, "method": "ping"})
        t.check(error_code(doc) == -32600 and doc.get("id") == 1, "wrong jsonrpc: %r" % doc)
        status, doc = rpc(g, {"jsonrpc": "2.0", "id": "x", "method": "no/such"})
        t.check(error_code(doc) == -32601 and doc.get("id") == "x", "unknown method: %r" % doc)
        status, doc = rpc(g, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                              "params": {"name": "gust_vpl_check", "arguments": {"program": 7}}})
        t.eq(error_code(doc), -32602, "an argument of the wrong type")
        status, doc = rpc(g, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "gust_nope"}})
        t.eq(error_code(doc), -32602, "unknown tool")
        status, doc = rpc(g, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        t.check(status == 202 and doc is None, "a notification alone: 202, no body (%s)" % status)
        status, doc = rpc(g, [{"jsonrpc": "2.0", "id": 10, "method": "ping"},
                              {"jsonrpc": "2.0", "method": "notifications/initialized"},
                              {"jsonrpc": "2.0", "id": 11, "method": "tools/call",
                               "params": {"name": "gust_dlq_list", "arguments": {"limit": 5}}},
                              {"jsonrpc": "2.0", "id": 12, "method": "nope"},
                              5])
        by_id = {d.get("id"): d for d in doc} if isinstance(doc, list) else {}
        t.check(status == 200 and isinstance(doc, list) and len(doc) == 4, "batch: four answers: %r" % doc)
        t.eq(by_id.get(10, {}).get("result"), {}, "batch: ping")
        dlq = by_id.get(11, {}).get("result", {})
        t.check(dlq.get("isError") is False and "dead_letters" in json.loads(dlq["content"][0]["text"]),
                "batch: gust_dlq_list from the worker: %r" % dlq)
        t.eq(error_code(by_id.get(12)), -32601, "batch: unknown method")
        t.eq(error_code(by_id.get(None)), -32600, "batch: a number is not a request")
        status, doc = rpc(g, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, token="wrong")
        t.eq(status, 401, "a wrong token")
        # A flow test runs on the admin worker: while a script spins to its timeout on
        # each event, the loop still answers.
        spin = "return { on_event = function(ev) while true do end end }"
        result = {}
        th = threading.Thread(target=lambda: result.update(doc=rpc(g, {
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "gust_flow_test", "arguments": {"script": spin, "events": [{}] * 5}}},
            token=ADMIN_TOKEN)[1]))
        th.start()
        time.sleep(0.5)
        t0 = time.monotonic()
        t.eq(g.request("GET", "/healthz")[0], 200, "healthz during a flow test")
        t.check(time.monotonic() - t0 < 0.5 * (5 if SANITIZED else 1), "the loop is not held by a flow test")
        th.join(60)
        texts = json.loads(result.get("doc", {}).get("result", {}).get("content", [{}])[0].get("text", "{}"))
        t.eq(["timeout" in r.get("error", "") or r.get("error", "").startswith("not run")
              for r in texts.get("results", [])], [True] * 5, "the spinning flow: 3 timeouts, then not run")

        # The read-only token: the read tools, never one that writes or runs code.
        status, doc = rpc(g, [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "gust_units"}},
                              {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                               "params": {"name": "gust_dlq_purge", "arguments": {"all": True}}},
                              {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                               "params": {"name": "gust_flow_test", "arguments": {"script": FLOW, "events": []}}}],
                          token=READ_TOKEN)
        by_id = {d.get("id"): d.get("result", {}) for d in doc} if isinstance(doc, list) else {}
        t.check(by_id.get(1, {}).get("isError") is False, "read token: gust_units: %r" % by_id.get(1))
        for i, name in ((2, "gust_dlq_purge"), (3, "gust_flow_test")):
            r = by_id.get(i, {})
            t.check(r.get("isError") is True and "needs the admin token" in r["content"][0]["text"],
                    "read token: %s refused: %r" % (name, r))
        t.eq(g.request("GET", "/units", headers={"Authorization": "Bearer " + READ_TOKEN})[0], 200,
             "read token: GET /units")
        t.eq(g.request("POST", "/reload", headers={"Authorization": "Bearer " + READ_TOKEN})[0], 401,
             "read token: POST /reload")
        status, _, _ = g.request("GET", "/mcp")
        t.eq(status, 405, "GET /mcp (no SSE stream)")
        t.check(g.healthy(), "gust is still up")
        bad = tmp.file("read-only.conf", "http { listen 127.0.0.1:1; admin_read_token_env GUST_MCP_READ; }\n")
        p = subprocess.run([GUST, "-t", "-c", bad], capture_output=True, text=True, timeout=30)
        t.check(p.returncode != 0 and "read-only.conf:1: admin_read_token_file (or admin_read_token_env) needs an "
                "admin token" in p.stderr + p.stdout, "a read-only token alone: %s" % (p.stderr + p.stdout))
    finally:
        if g is not None:
            g.stop()
        nats.stop()
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
