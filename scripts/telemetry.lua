-- Telemetry filter (bench/mqtt-ladder.sh, README "edge path"): readings
-- {"id":..,"device":"d17","v":0..99,"ts":..} from 1 000 devices; only the high ones
-- (v >= 50) go on, tagged, to ev.telemetry.out. Meant to run on the edge path:
--   flow telemetry { script scripts/telemetry.lua; edge sensors; }
local HIGH, ALARM = 50, 90

return {
  source = "ev.telemetry",   -- used only when host.conf gives no `edge`/`source`
  on_event = function(ev)
    local v = tonumber(ev.v)
    if v == nil or type(ev.device) ~= "string" then
      error("reading without a numeric v or a device")
    end
    if v >= HIGH then
      emit("ev.telemetry.out", {
        id = ev.id, device = ev.device, v = v, ts = ev.ts,
        level = v >= ALARM and "alarm" or "high",
      })
    end
  end,
}
