-- The ship's dock system ("sol") and bay (4) merge into one field ("sol:4"); the
-- player's rank ("captain") becomes a table ({kind = "captain", level = 3}).
--
-- The Lua twin of a Rust step (see 0002-credits-and-names.lua).
local savechain = require("savechain")
local up = require("savechain.upgrade")

local LEVELS = { cadet = 1, pilot = 2, captain = 3, commodore = 4 }

return function(data)
  local ship = data.ship
  local system, bay = ship.dock_system, ship.dock_bay
  up.drop(data, "ship.dock_system")
  up.drop(data, "ship.dock_bay")
  if type(system) == "string" and bay ~= nil then
    if math.type(bay) ~= "integer" then
      error("ship.dock_bay is not an integer")
    end
    ship.dock = system .. ":" .. bay
  elseif system == nil and bay == nil then
    ship.dock = savechain.null
  else
    error("ship.dock_system and ship.dock_bay go together")
  end
  local rank = data.player.rank
  if type(rank) == "string" then
    local level = LEVELS[rank] or error(string.format("unknown rank %q", rank))
    data.player.rank = { kind = rank, level = level }
  end
end
