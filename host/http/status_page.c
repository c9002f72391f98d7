/* GET / : the status page. One small self-contained HTML page compiled into the binary
 * (no build step, no external assets). It fetches units, events and dlq with RELATIVE
 * URLs, so it works at the root, under base_path, and behind a proxy that strips the
 * prefix alike; it must therefore be served at "<base>/" (server.c redirects "<base>"
 * there). Rates are computed in the browser from the deltas between two /units polls.
 * Everything shown is inserted with textContent: payloads are user data.
 *
 * With an admin token, the page (like the routes it calls) needs the bearer token. A
 * browser cannot add it by itself: put the page behind a proxy that authenticates the
 * user its own way and adds `Authorization: Bearer ...` to what it forwards (then the
 * page's fetches get it too), or run without a token on loopback. */
#include <string.h>

#include "internal.h"

static const char page[] =
    "<!doctype html>\n"
    "<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>gust</title>\n"
    "<style>\n"
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}\n"
    "h1{font-size:1.3em;margin:0 0 .3em}h2{font-size:1.05em;margin:1.4em 0 .4em}\n"
    "table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.25em .6em;"
    "border-bottom:1px solid #ddd;vertical-align:top}\n"
    "th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    "code,pre{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all;margin:0}\n"
    ".bad{color:#b00}.ok{color:#070}#status{color:#666}\n"
    "</style></head><body>\n"
    "<h1>gust</h1>\n"
    "<div id=\"status\">loading&hellip;</div>\n"
    "<h2>Units</h2>\n"
    "<table id=\"units\"><thead><tr><th>unit</th><th>kind</th><th>state</th><th>source</th>"
    "<th>events/s</th><th>emits/s</th><th>failed/s</th><th>ok</th><th>failed</th><th>dead</th>"
    "<th>last error</th></tr></thead><tbody></tbody></table>\n"
    "<h2>Recent events</h2>\n"
    "<table id=\"events\"><thead><tr><th>unit</th><th>at</th><th>seq</th><th>subject</th>"
    "<th>outcome</th><th>payload</th><th>emits / error</th></tr></thead><tbody></tbody></table>\n"
    "<h2>Dead letters <span id=\"dlqtotal\"></span></h2>\n"
    "<table id=\"dlq\"><thead><tr><th>seq</th><th>unit</th><th>subject</th><th>attempts</th>"
    "<th>dead at</th><th>error</th><th>payload</th></tr></thead><tbody></tbody></table>\n"
    "<script>\n"
    "'use strict';\n"
    "var prev = null;\n"
    "function get(path) {\n"
    "  return fetch(path, {cache: 'no-store'}).then(function (r) {\n"
    "    if (r.status === 401) throw new Error('401: the admin token is needed (see the README)');\n"
    "    if (!r.ok) throw new Error(path + ': HTTP ' + r.status);\n"
    "    return r.json();\n"
    "  });\n"
    "}\n"
    "function cell(tr, text, cls) {\n"
    "  var td = document.createElement('td');\n"
    "  if (cls) td.className = cls;\n"
    "  td.textContent = text === null || text === undefined ? '' : String(text);\n"
    "  tr.appendChild(td); return td;\n"
    "}\n"
    "function pre(tr, text) { var td = cell(tr, ''); var p = document.createElement('pre'); p.textContent = text; td.appendChild(p); }\n"
    "function short(s, n) { s = s === undefined || s === null ? '' : String(s); return s.length > n ? s.slice(0, n) + '\\u2026' : s; }\n"
    "function body(id) { var b = document.querySelector('#' + id + ' tbody'); b.textContent = ''; return b; }\n"
    "function rate(u, key, now) {\n"
    "  if (!prev || !prev.units[u.name]) return '';\n"
    "  var dt = (now - prev.t) / 1000; if (dt <= 0) return '';\n"
    "  return ((u[key] - prev.units[u.name][key]) / dt).toFixed(1);\n"
    "}\n"
    "function showUnits(d) {\n"
    "  var now = Date.now(), b = body('units'), snap = {t: now, units: {}};\n"
    "  d.units.forEach(function (u) {\n"
    "    var tr = document.createElement('tr'); tr.className = 'unit';\n"
    "    cell(tr, u.name); cell(tr, u.kind); cell(tr, u.state, u.state === 'running' ? 'ok' : 'bad'); cell(tr, u.source);\n"
    "    cell(tr, rate(u, 'events_ok', now), 'n'); cell(tr, rate(u, 'emits', now), 'n'); cell(tr, rate(u, 'events_failed', now), 'n');\n"
    "    cell(tr, u.events_ok, 'n'); cell(tr, u.events_failed, 'n'); cell(tr, u.dead_letters, 'n');\n"
    "    cell(tr, u.last_error || '', 'bad');\n"
    "    b.appendChild(tr); snap.units[u.name] = u;\n"
    "  });\n"
    "  prev = snap;\n"
    "  var s = d.units.length + ' unit(s)';\n"
    "  if (d.generation !== undefined) s += ', generation ' + d.generation + ', ' + d.reload_count + ' reload(s)';\n"
    "  if (d.last_reload_error) s += ', last reload error: ' + d.last_reload_error;\n"
    "  s += ' \\u2014 updated ' + new Date(now).toLocaleTimeString();\n"
    "  document.getElementById('status').textContent = s;\n"
    "}\n"
    "function payloadOf(o) { return o.payload !== undefined ? o.payload : o.payload_base64 !== undefined ? 'base64:' + o.payload_base64 : ''; }\n"
    "function showEvents(d) {\n"
    "  var rows = [];\n"
    "  d.units.forEach(function (u) { u.events.forEach(function (e) { rows.push([u.name, e]); }); });\n"
    "  rows.sort(function (a, b) { return a[1].at < b[1].at ? 1 : a[1].at > b[1].at ? -1 : 0; });\n"
    "  var b = body('events');\n"
    "  rows.slice(0, 50).forEach(function (r) {\n"
    "    var e = r[1], tr = document.createElement('tr');\n"
    "    cell(tr, r[0]); cell(tr, e.at); cell(tr, e.seq, 'n'); cell(tr, e.subject);\n"
    "    cell(tr, e.outcome + (e.attempt > 1 ? ' (attempt ' + e.attempt + ')' : ''), e.outcome === 'ok' ? 'ok' : 'bad');\n"
    "    pre(tr, short(payloadOf(e), 300));\n"
    "    pre(tr, e.error ? e.error : e.emits.map(function (m) { return m.subject + ' ' + short(payloadOf(m), 200); }).join('\\n'));\n"
    "    b.appendChild(tr);\n"
    "  });\n"
    "}\n"
    "function showDlq(d) {\n"
    "  document.getElementById('dlqtotal').textContent = '(' + d.total + ')';\n"
    "  var b = body('dlq');\n"
    "  d.dead_letters.forEach(function (l) {\n"
    "    var v = l.envelope || {}, tr = document.createElement('tr');\n"
    "    cell(tr, l.seq, 'n'); cell(tr, l.unit); cell(tr, v.original_subject); cell(tr, v.attempts, 'n');\n"
    "    cell(tr, v.dead_at); pre(tr, short(v.error, 300)); pre(tr, short(payloadOf(v), 300));\n"
    "    b.appendChild(tr);\n"
    "  });\n"
    "}\n"
    "function fail(e) { var s = document.getElementById('status'); s.textContent = String(e.message || e); s.className = 'bad'; }\n"
    "function refresh() {\n"
    "  get('units').then(function (d) { document.getElementById('status').className = ''; showUnits(d); })\n"
    "    .then(function () { return get('events'); }).then(showEvents)\n"
    "    .then(function () { return get('dlq?limit=20'); }).then(showDlq)\n"
    "    .catch(fail);\n"
    "}\n"
    "refresh();\n"
    "setInterval(refresh, 2000);\n"
    "</script>\n"
    "</body></html>\n";

void gust_status_page_handle(struct gust_http *http, h2o_req_t *req)
{
    (void)http;
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) &&
        !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"))) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("GET, HEAD"));
        gust_http_send_error(req, GUST_ROUTE_STATUS, 405, "method not allowed");
        return;
    }
    /* The page holds no data, but keep browsers from framing it or sniffing types. */
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-frame-options"), 0, NULL, H2O_STRLIT("DENY"));
    h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-content-type-options"), 0, NULL,
                          H2O_STRLIT("nosniff"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL, H2O_STRLIT("no-store"));
    gust_http_send(req, GUST_ROUTE_STATUS, 200, "text/html; charset=utf-8", page, sizeof(page) - 1);
}
