-- Positions from thousands of kilometres to kilometres; hull from percent to a fraction.
local up = require("savechain.upgrade")

local function scale(position)
  for i = 1, #position do
    position[i] = position[i] * 1000.0
  end
end

return function(data)
  scale(data.ship.position)
  up.map(data, "systems", function(system) scale(system.position) end)
  data.ship.hull = data.ship.hull / 100.0
end
