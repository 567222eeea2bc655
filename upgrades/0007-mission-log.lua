-- The missions module keeps one log of missions with their state, instead of two lists.
local up = require("savechain.upgrade")

return function(data)
  local missions = data.lua.missions
  local log = {}
  for _, id in ipairs(missions.active) do
    log[#log + 1] = { id = id, state = "active" }
  end
  for _, id in ipairs(missions.done) do
    log[#log + 1] = { id = id, state = "done" }
  end
  up.drop(data, "lua.missions.active")
  up.drop(data, "lua.missions.done")
  -- Stays an array when there are no missions at all.
  missions.log = require("savechain").array(log)
end
