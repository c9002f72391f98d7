-- wrk script for bench/ingest.sh: POSTs the orders event of bench/WORKLOAD.md and prints
-- one JSON line with the counts and latency percentiles when done.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"id": "SO#1001", "email": "Jane.Doe@ACME.com", "total_price": "347.00", ' ..
  '"t": 1764400000000.123, "shipping_address": {"country": "France"}, "line_items": [' ..
  '{"sku": "A-12", "quantity": "2", "unit_price_cents": 9900}, ' ..
  '{"sku": "B-07", "quantity": "1", "unit_price_cents": 14900}, ' ..
  '{"sku": "C-33", "quantity": "4", "unit_price_cents": 450}]}'

non_202 = 0 -- global: done() reads it from each thread
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function response(status, headers, body)
  if status ~= 202 then
    non_202 = non_202 + 1
  end
end

function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do
    bad = bad + (t:get("non_202") or 0)
  end
  io.write(string.format(
    '{"requests":%d,"seconds":%.3f,"rate":%.0f,"non_202":%d,"socket_errors":%d,' ..
    '"latency_ms":{"p50":%.3f,"p90":%.3f,"p99":%.3f,"max":%.3f}}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6), bad,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000))
end
