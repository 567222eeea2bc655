-- Script modules register their state and get it back after a load.
local savechain = require("savechain")

local tests = {}

function tests.modules_save_and_load_their_state()
  local economy = { prices = { ore = 12.5 } }
  local missions = { active = {} }
  savechain.register("economy", {
    save = function() return economy end,
    load = function(state) economy = state or { prices = {} } end,
  })
  savechain.register("missions", {
    save = function() return missions end,
    load = function(state) missions = state end,
  })
  missions.active[1] = { id = "m1", reward = 500 }
  local text = savechain.encode(savechain.collect())

  economy, missions = nil, nil
  savechain.restore(savechain.decode(text))
  assert(economy.prices.ore == 12.5 and math.type(economy.prices.ore) == "float")
  assert(missions.active[1].id == "m1")
end

function tests.modules_missing_from_a_save_load_nil()
  local seen = "unset"
  savechain.register("new_module", {
    save = function() return { fresh = true } end,
    load = function(state) seen = state end,
  })
  savechain.restore({})
  assert(seen == nil)
end

function tests.states_of_unknown_modules_are_kept()
  -- A save made by a build with a module this build lacks keeps that module's state.
  savechain.restore(savechain.decode('{"retired_module": {"x": 1}}'))
  local states = savechain.collect()
  assert(states.retired_module and states.retired_module.x == 1)
end

function tests.register_checks_its_arguments()
  local ok, err = pcall(savechain.register, "m", { save = function() end })
  assert(not ok and err:find("expects { save = function, load = function }", 1, true), err)
end

-- The example of docs/FORMAT.md, section 8, word for word.
function tests.the_documented_example()
  local Ship = savechain.register_class("Ship", { __index = {} })

  local state = { ships = {}, home = nil }
  savechain.register("fleet", {
    save = function() return state end,
    load = function(saved) state = saved or { ships = {} } end,
  })

  local kestrel = setmetatable({ name = "Kestrel", hull = 100.0, cargo = savechain.array() }, Ship)
  state.ships[1] = kestrel
  state.flagship = kestrel

  local text = savechain.encode(savechain.collect())
  savechain.restore(savechain.decode(text))
  assert(state.flagship == state.ships[1])   -- still one table

  local documented = [==[
{
  "fleet": {
    "flagship": ["s", [1, ["c", ["Ship", {
      "cargo": [],
      "hull": ["d", "0x1.9p+6"],
      "name": "Kestrel"
    }]]]],
    "ships": [
      ["r", [1]]
    ]
  }
}
]==]
  -- Other tests of this file register modules of their own; keep only "fleet".
  local fleet_only = savechain.encode({ fleet = savechain.collect().fleet })
  assert(fleet_only == documented, fleet_only)
end

return tests
