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

function tests.a_state_saved_by_an_older_module_is_upgraded_before_load()
  -- Version 1 kept credits as a number; version 2 a wallet; version 3 a wallet of coins.
  local loaded
  local function wallet(version, upgrades)
    return {
      version = version,
      upgrades = upgrades,
      save = function() return loaded end,
      load = function(state) loaded = state end,
    }
  end
  local upgrades = {
    [1] = function(state) return { wallet = { credits = state.credits } } end,
    [2] = function(state) state.wallet.coins = { credits = state.wallet.credits } state.wallet.credits = nil end,
  }
  -- A save of version 1 of the module: it declared no version then.
  savechain.register("wallet", wallet(nil, nil))
  loaded = { credits = 250 }
  local old = savechain.encode(savechain.collect(), { compact = true })
  assert(not old:find("savechain.versions", 1, true), old)

  savechain.register("wallet", wallet(3, upgrades))
  savechain.restore(savechain.decode(old))
  assert(loaded.wallet.coins.credits == 250 and loaded.wallet.credits == nil)
  -- Saved again, the state carries its version, and loads as it is.
  local text = savechain.encode(savechain.collect(), { compact = true })
  assert(text:find('"savechain.versions":{"wallet":3}', 1, true), text)
  loaded = nil
  savechain.restore(savechain.decode(text))
  assert(loaded.wallet.coins.credits == 250)

  -- A state at version 2 takes only the last upgrade.
  savechain.restore({ wallet = { wallet = { credits = 7 } }, ["savechain.versions"] = { wallet = 2 } })
  assert(loaded.wallet.coins.credits == 7)
end

function tests.a_state_that_cannot_be_upgraded_loads_nothing()
  local loads = 0
  savechain.register("ledger", {
    version = 2,
    upgrades = { [1] = function() error("the ledger is torn") end },
    save = function() return {} end,
    load = function() loads = loads + 1 end,
  })
  savechain.register("logbook", {
    version = 3,
    upgrades = { [2] = function(s) return s end },
    save = function() return {} end,
    load = function() loads = loads + 1 end,
  })
  for _, case in ipairs({
    { { ledger = {}, ["savechain.versions"] = { ledger = 5 } }, "is version 5, newer than the module (version 2)" },
    { { ledger = {} }, "upgrading the state of ledger from version 1 to 2 failed: " },
    { { logbook = {} }, "the module has no upgrade from 1 to 2" },
    { { logbook = {}, ["savechain.versions"] = { logbook = "x" } }, "not an integer from 1" },
  }) do
    local ok, err = pcall(savechain.restore, case[1])
    assert(not ok and err:find(case[2], 1, true), err)
    assert(err:find("nothing was loaded", 1, true) or err:find("not an integer", 1, true), err)
    assert(loads == 0, "a module was loaded")
  end
  savechain.register("ledger", { save = function() return nil end, load = function() end })
  savechain.register("logbook", { save = function() return nil end, load = function() end })
end

function tests.versions_of_modules_not_registered_are_kept()
  savechain.restore(savechain.decode('{"old_mod": {"x": 1}, "savechain.versions": {"old_mod": 4}}'))
  local states = savechain.collect()
  assert(states.old_mod.x == 1 and states["savechain.versions"].old_mod == 4)
end

function tests.register_checks_versions_and_upgrades()
  local handlers = function(extra)
    local h = { save = function() end, load = function() end }
    for k, v in pairs(extra) do h[k] = v end
    return h
  end
  for _, case in ipairs({
    { handlers({ version = 0 }), "version is an integer from 1" },
    { handlers({ version = 1.5 }), "version is an integer from 1" },
    { handlers({ upgrades = {} }), "upgrades need the module's version" },
    { handlers({ version = 2, upgrades = { [2] = function() end } }), "found upgrades[2]" },
    { handlers({ version = 2, upgrades = { [1] = 5 } }), "upgrades[N] is the function" },
  }) do
    local ok, err = pcall(savechain.register, "checked", case[1])
    assert(not ok and err:find(case[2], 1, true), err)
  end
  local ok, err = pcall(savechain.register, "savechain.versions", handlers({}))
  assert(not ok and err:find("is the library's own", 1, true), err)
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
