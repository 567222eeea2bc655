-- The planned route, a list of system ids, becomes waypoints that carry each system's name.
local savechain = require("savechain")
local up = require("savechain.upgrade")

return function(data)
  local mine = data.mods.cartographer
  local waypoints = savechain.array()
  for i, id in ipairs(mine.route) do
    -- The game's data as its own chain left it: systems keyed by id (game version 4 on).
    local system = data.systems[id]
    if system == nil then
      error(("waypoint %d of the route is %q, a star system this save does not have"):format(i, id))
    end
    waypoints[i] = { system = id, name = system.name }
  end
  up.drop(data, "mods.cartographer.route")
  mine.waypoints = waypoints
end
