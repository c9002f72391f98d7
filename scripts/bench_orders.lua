-- The orders workload (bench/WORKLOAD.md): reshape a shop order for the
-- CRM. Per event: order_ref from id, the e-mail lower-cased, the total as a
-- number, the country code, one position per line item, t passed through.
--
-- Missing or malformed fields fail the event with a message naming the field,
-- so it is retried and then dead-lettered rather than sent on half-filled:
-- id (string or number), email (string), total_price and every line item's
-- quantity and unit_price_cents (numbers or numeric strings), line_items (an
-- array). An id beyond 2^53 arrives as a bignum; tostring gives its digits.
-- Optional: shipping_address.country (absent: country is null) and t
-- (absent: not emitted). An id without '#' is its own order_ref.
-- string.lower folds ASCII letters only; other UTF-8 in the e-mail passes unchanged.

local COUNTRY = { France = "FR", Germany = "DE", Italy = "IT", Portugal = "PT" }

local floor, lower, find, sub = math.floor, string.lower, string.find, string.sub
local tonumber, tostring, type, error = tonumber, tostring, type, error

-- Level 2: the error names the line of on_event that asked for the field. The
-- message is built only on failure (item: the line item's index, if any), so
-- the usual path creates no strings.
local function need_number(v, what, item)
  local n = tonumber(v)
  if n == nil then
    if item then
      what = "line_items[" .. item .. "]." .. what
    end
    error("bench_orders: " .. what .. " is missing or not a number", 2)
  end
  return n
end

local function need(v, kind, what)
  if type(v) ~= kind then
    error("bench_orders: " .. what .. " is missing or not a " .. kind, 2)
  end
  return v
end

local function round2(x)
  return floor(x * 100 + 0.5) / 100
end

return {
  source = "ev.orders",
  on_event = function(ev)
    local id = ev.id
    local kind = type(id)
    if kind ~= "string" and kind ~= "number" and kind ~= "userdata" then -- userdata: a bignum
      error("bench_orders: id is missing or not a string or number", 1)
    end
    id = tostring(id)
    local hash = find(id, "#", 1, true)
    local total = need_number(ev.total_price, "total_price")
    local items = need(ev.line_items, "table", "line_items")

    local positions = array({})
    for i = 1, #items do
      local item = items[i]
      positions[i] = {
        sku = item.sku,
        qty = need_number(item.quantity, "quantity", i),
        unit_eur = round2(need_number(item.unit_price_cents, "unit_price_cents", i) / 100),
      }
    end

    local address = ev.shipping_address
    local country = type(address) == "table" and address.country or nil
    if total >= 0 then
      emit("ev.orders.out", {
        order_ref = hash and sub(id, hash + 1) or id,
        customer_email = lower(need(ev.email, "string", "email")),
        total_eur = total,
        country = COUNTRY[country] or country or null,
        positions = positions,
        t = ev.t,
      })
    end
  end,
}
