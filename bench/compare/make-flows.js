// make-flows.js [--check]: writes flows.json, the Node-RED side of bench/compare/run.sh,
// with orders.js as the body of its one function node. --check writes nothing: it fails
// when flows.json is not what this script makes, or when the function does not give the
// expected emit of bench/WORKLOAD.md for its example event (and for the other
// three countries, an unknown one, and a failing event).
//
//   POST /ingest/orders -> orders -> http request (SINK_URL, keep-alive) -> reply -> 202
//                          orders -(threshold or 400)-------------------------> reply
//   mqtt in orders/in (QoS 1) -> orders -> mqtt out orders/out (QoS 1)
//   GET /healthz -> 200 (the cold start is timed to it, as gust's)
//
// The sink URL and the broker come from the environment (SINK_URL, MQTT_HOST, MQTT_PORT).
"use strict";
const fs = require("fs");
const path = require("path");
const assert = require("assert");

const dir = __dirname;
const func = fs.readFileSync(path.join(dir, "orders.js"), "utf8");
const tab = "bench";

const reply = [
    "// Answer the client only now that the sink has the order: 202 as gust's /ingest,",
    "// 502 when the sink failed.",
    "msg.statusCode = msg.statusCode === 200 ? 202 : 502;",
    "msg.headers = {};",
    "msg.payload = \"\";",
    "return msg;",
    "",
].join("\n");

const node = (o) => Object.assign({ z: tab, x: 0, y: 0, wires: [] }, o);
const flows = [
    { id: tab, type: "tab", label: "gust compare: orders", disabled: false, info: "" },
    node({ id: "http_in", type: "http in", name: "ingest", url: "/ingest/orders", method: "post",
           upload: false, swaggerDoc: "", wires: [["orders"]] }),
    node({ id: "mqtt_in", type: "mqtt in", name: "orders in", topic: "orders/in", qos: "1",
           datatype: "json", broker: "broker", nl: false, rap: true, rh: 0, inputs: 0,
           wires: [["orders"]] }),
    node({ id: "orders", type: "function", name: "orders", func: func, outputs: 3, timeout: 0,
           noerr: 0, initialize: "", finalize: "", libs: [],
           wires: [["deliver"], ["mqtt_out"], ["respond"]] }),
    node({ id: "deliver", type: "http request", name: "crm sink", method: "POST", ret: "txt",
           paytoqs: "ignore", url: "${SINK_URL}", tls: "", persist: true, proxy: "",
           insecureHTTPParser: false, authType: "", senderr: false, headers: [],
           wires: [["reply"]] }),
    node({ id: "reply", type: "function", name: "delivered", func: reply, outputs: 1, timeout: 0,
           noerr: 0, initialize: "", finalize: "", libs: [], wires: [["respond"]] }),
    node({ id: "respond", type: "http response", name: "answer", statusCode: "", headers: {} }),
    node({ id: "mqtt_out", type: "mqtt out", name: "orders out", topic: "orders/out", qos: "1",
           retain: "false", respTopic: "", contentType: "", userProps: "", correl: "", expiry: "",
           broker: "broker" }),
    node({ id: "health_in", type: "http in", name: "healthz", url: "/healthz", method: "get",
           upload: false, swaggerDoc: "", wires: [["health"]] }),
    node({ id: "health", type: "http response", name: "ok", statusCode: "200", headers: {} }),
    { id: "broker", type: "mqtt-broker", name: "mosquitto", broker: "${MQTT_HOST}", port: "${MQTT_PORT}",
      clientid: "nodered-compare", autoConnect: true, usetls: false, protocolVersion: "4",
      keepalive: "60", cleansession: true, autoUnsubscribe: true,
      birthTopic: "", birthQos: "0", birthPayload: "", birthMsg: {},
      closeTopic: "", closeQos: "0", closePayload: "", closeMsg: {},
      willTopic: "", willQos: "0", willPayload: "", willMsg: {},
      userProps: "", sessionExpiry: "" },
];
flows.forEach((n, i) => { if ("x" in n) { n.x = 150 + 200 * (i % 4); n.y = 60 + 60 * Math.floor(i / 4); } });
const text = JSON.stringify(flows, null, 2) + "\n";
const file = path.join(dir, "flows.json");

if (process.argv[2] !== "--check") {
    fs.writeFileSync(file, text);
    process.exit(0);
}

assert.strictEqual(fs.readFileSync(file, "utf8"), text, "flows.json is stale: run node make-flows.js");

// Run the function as the function node does: msg and node in scope, its return value out.
const run = new Function("msg", "node", func);
const errors = [];
const fakeNode = { error: (m) => errors.push(m) };
const event = (country, id) => ({
    id: id || "SO#1001", email: "Jane.Doe@ACME.com", total_price: "347.00", t: 1764400000000.123,
    shipping_address: { country: country },
    line_items: [
        { sku: "A-12", quantity: "2", unit_price_cents: 9900 },
        { sku: "B-07", quantity: "1", unit_price_cents: 14900 },
        { sku: "C-33", quantity: "4", unit_price_cents: 450 }],
});
const expected = (country) => ({
    order_ref: "1001", customer_email: "jane.doe@acme.com", total_eur: 347, country: country,
    positions: [{ sku: "A-12", qty: 2, unit_eur: 99 }, { sku: "B-07", qty: 1, unit_eur: 149 },
                { sku: "C-33", qty: 4, unit_eur: 4.5 }],
    t: 1764400000000.123,
});
for (const [name, code] of [["France", "FR"], ["Germany", "DE"], ["Italy", "IT"], ["Portugal", "PT"], ["Spain", "Spain"]]) {
    const mqtt = run({ payload: event(name) }, fakeNode);
    assert.deepStrictEqual(JSON.parse(JSON.stringify(mqtt[1].payload)), expected(code));
    const http = run({ payload: event(name), req: {} }, fakeNode);
    assert.deepStrictEqual(http[1], null);
    assert.deepStrictEqual(JSON.parse(JSON.stringify(http[0].payload)), expected(code));
}
assert.strictEqual(run({ payload: event("France", 1001) }, fakeNode)[1].payload.order_ref, "1001");
const noAddress = event("France");
delete noAddress.shipping_address;
assert.strictEqual(run({ payload: noAddress }, fakeNode)[1].payload.country, null);
const bad = event("France");
bad.line_items[1].quantity = "two";
assert.strictEqual(run({ payload: bad }, fakeNode), null);
assert.match(errors[0], /line_items\[2\]\.quantity is missing or not a number/);
const badHttp = run({ payload: bad, req: {} }, fakeNode);
assert.strictEqual(badHttp[2].statusCode, 400);
const negative = event("France");
negative.total_price = "-1";
assert.strictEqual(run({ payload: negative }, fakeNode), null);
assert.strictEqual(run({ payload: negative, req: {} }, fakeNode)[2].statusCode, 202);
console.log("flows.json is current; the function gives bench/WORKLOAD.md's emit");
