// The orders workload (bench/WORKLOAD.md) as the body of a Node-RED function node:
// the same work as scripts/bench_orders.lua, field by field. make-flows.js puts it into
// flows.json; edit this file, then run `node make-flows.js`.
//
// Outputs: 1 the reshaped order of an HTTP request (to the http request node), 2 that of
// an MQTT message (to mqtt out), 3 the answer to an HTTP request that emits nothing (the
// threshold) or failed (400). A failed MQTT message is logged and dropped.
const COUNTRY = { France: "FR", Germany: "DE", Italy: "IT", Portugal: "PT" };
const NUMERIC = /^\s*(?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|0[xX][0-9a-fA-F]+)\s*$/;

// Lua's tonumber: a number, or a string holding one; anything else fails, naming the field.
function needNumber(v, what, item) {
    if (typeof v === "number") return v;
    if (typeof v === "string" && NUMERIC.test(v)) return Number(v);
    if (item) what = "line_items[" + item + "]." + what;
    throw new Error("bench_orders: " + what + " is missing or not a number");
}

function round2(x) {
    return Math.floor(x * 100 + 0.5) / 100;
}

const ev = msg.payload;
let out = null;
try {
    if (ev === null || typeof ev !== "object") throw new Error("bench_orders: the event is not a JSON object");
    let id = ev.id;
    if (typeof id !== "string" && typeof id !== "number") {
        throw new Error("bench_orders: id is missing or not a string or number");
    }
    id = String(id);
    const hash = id.indexOf("#");
    const total = needNumber(ev.total_price, "total_price");
    const items = ev.line_items;
    if (items === null || typeof items !== "object") {
        throw new Error("bench_orders: line_items is missing or not a table");
    }
    const positions = [];
    const n = Array.isArray(items) ? items.length : 0;
    for (let i = 0; i < n; i++) {
        const item = items[i];
        positions.push({
            sku: item.sku,
            qty: needNumber(item.quantity, "quantity", i + 1),
            unit_eur: round2(needNumber(item.unit_price_cents, "unit_price_cents", i + 1) / 100),
        });
    }
    const address = ev.shipping_address;
    const country = address !== null && typeof address === "object" ? address.country : undefined;
    if (total >= 0) {
        const email = ev.email;
        if (typeof email !== "string") throw new Error("bench_orders: email is missing or not a string");
        out = {
            order_ref: hash >= 0 ? id.substring(hash + 1) : id,
            // string.lower folds ASCII letters only
            customer_email: /[^\x00-\x7f]/.test(email)
                ? email.replace(/[A-Z]+/g, (s) => s.toLowerCase())
                : email.toLowerCase(),
            total_eur: total,
            country: (Object.prototype.hasOwnProperty.call(COUNTRY, country) ? COUNTRY[country] : country) ?? null,
            positions: positions,
            t: ev.t,
        };
    }
} catch (e) {
    if (!msg.req) {
        node.error(e.message, msg);
        return null;
    }
    msg.statusCode = 400;
    msg.headers = {};
    msg.payload = e.message;
    return [null, null, msg];
}
if (msg.req) {
    if (out === null) {
        msg.statusCode = 202;
        msg.headers = {};
        msg.payload = "";
        return [null, null, msg];
    }
    msg.headers = { "content-type": "application/json" };
    msg.payload = out;
    return [msg, null, null];
}
if (out === null) return null;
msg.payload = out;
return [null, msg, null];
