-- bench/flow-hop.sh's state variant: the orders flow (scripts/bench_orders.lua,
-- required from lua_path) with one state.incr per event, over 1 000 keys (the order
-- number modulo 1 000).
local orders = require("bench_orders")
local tonumber, tostring, match = tonumber, tostring, string.match
return {
  source = orders.source,
  on_event = function(ev)
    state.incr("k" .. tonumber(match(tostring(ev.id), "%d+")) % 1000)
    orders.on_event(ev)
  end,
}
