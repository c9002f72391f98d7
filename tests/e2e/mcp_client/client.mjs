// The official MCP client against gust's POST /mcp: node client.mjs URL TOKEN CASES.json
// prints one JSON object with what each step saw (test_mcp.py checks it).
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, casesPath] = process.argv.slice(2);
const cases = JSON.parse(readFileSync(casesPath, "utf8"));
const out = {};

function text(result) {
  return { isError: result.isError === true, text: result.content.map((c) => c.text).join("") };
}

const withToken = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "gust-e2e", version: "1.0.0" });
await client.connect(withToken);
out.server = client.getServerVersion();
out.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, schema: t.inputSchema }));
out.units = text(await client.callTool({ name: "gust_units", arguments: {} }));
out.vpl = text(await client.callTool({ name: "gust_vpl_check", arguments: { program: cases.broken_vpl } }));
out.flow = text(await client.callTool({ name: "gust_flow_test", arguments: cases.flow_test }));
await client.close();

const anonymous = new Client({ name: "gust-e2e-anonymous", version: "1.0.0" });
try {
  await anonymous.connect(new StreamableHTTPClientTransport(new URL(url)));
  out.anonymous = { connected: true };
} catch (e) {
  out.anonymous = { connected: false, error: String(e && e.message ? e.message : e) };
}
console.log(JSON.stringify(out));
