-- Each cargo record {item = "ore", qty = 40} becomes {good = "ore", count = 40,
-- mass = 100.0}: tonnes from each good's mass per unit.
--
-- The Lua twin of a Rust step (see 0002-credits-and-names.lua).
local up = require("savechain.upgrade")

local UNIT_MASS = { ore = 2.5, water = 1.0, fuel = 0.8 }

return function(data)
  local cargo = data.ship.cargo
  if type(cargo) ~= "table" then
    error("ship.cargo is not an array")
  end
  for i, record in ipairs(cargo) do
    local at = string.format("ship.cargo[%d]", i - 1)
    if record.item == nil then error(at .. " has no item") end
    if record.qty == nil then error(at .. " has no qty") end
    local good, count = record.item, record.qty
    -- A count that is not a whole number (a hand edit, say) has no mass to give: the save
    -- fails here rather than carry a made-up one.
    if math.type(count) ~= "integer" then
      error(string.format("%s.qty is not an integer: %s", at, tostring(count)))
    end
    up.drop(data, at .. ".item")
    up.drop(data, at .. ".qty")
    local unit = UNIT_MASS[good] or 1.0
    record.good, record.count = good, count
    record.mass = count * unit
  end
end
