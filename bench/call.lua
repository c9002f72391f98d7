-- bench/call.sh's flow: the same work for both subjects (the orders event's id and
-- country into a small table); a call (ev.call) replies it, plain ingest (ev.orders)
-- only builds it.
return {
  on_event = function(ev, meta)
    local out = { id = ev.id, country = ev.country, lines = #(ev.line_items or {}) }
    if meta.subject == "ev.call" then
      reply(out)
    end
  end,
}
