-- The upgrade helpers, one change a line.
local savechain = require("savechain")
local up = require("savechain.upgrade")

local function sample()
  return savechain.decode([[{
    "player": {"hp": 80, "credits": 1200, "legacy_flag": true},
    "ship": {"cargo": [{"item": "ore", "mass": 2.5}, {"item": "ice", "mass": 1.0}]},
    "systems": [{"id": "sol", "x": 0}, {"id": "vega", "x": 25}]
  }]])
end

local tests = {}

function tests.rename_move_default_drop()
  up.take_dropped()
  local data = sample()
  assert(up.rename(data, "player.hp", "health"))
  assert(up.move(data, "player.credits", "player.wallet.credits"))
  assert(up.default(data, "ship.shield", 100))
  assert(not up.default(data, "ship.shield", 5))
  assert(up.drop(data, "player.legacy_flag"))
  assert(data.player.health == 80 and data.player.hp == nil)
  assert(data.player.wallet.credits == 1200 and data.player.credits == nil)
  assert(data.ship.shield == 100 and data.player.legacy_flag == nil)
  local dropped = up.take_dropped()
  assert(table.concat(dropped, " ") == "player.hp player.credits player.legacy_flag", table.concat(dropped, " "))
  assert(#up.take_dropped() == 0)
end

function tests.missing_paths_change_nothing()
  local data = sample()
  assert(not up.rename(data, "player.mana", "magic"))
  assert(not up.move(data, "nowhere.x", "player.x"))
  assert(not up.map(data, "ship.crew", function() error("not called") end))
  assert(data.player.x == nil)
end

function tests.map_changes_each_element()
  local data = sample()
  up.map(data, "ship.cargo", function(item) item.mass = item.mass * 1000 end)
  up.map(data, { "ship", "cargo" }, function(item, i) return { name = item.item, slot = i, mass = item.mass } end)
  assert(data.ship.cargo[1].mass == 2500.0 and data.ship.cargo[2].slot == 2 and data.ship.cargo[2].name == "ice")
end

function tests.index_by_turns_an_array_into_a_map()
  local data = sample()
  assert(up.index_by(data, "systems", "id"))
  assert(data.systems.sol.x == 0 and data.systems.vega.x == 25)
  local text = savechain.encode(data.systems, { compact = true })
  assert(text == '{"sol":{"id":"sol","x":0},"vega":{"id":"vega","x":25}}', text)

  local dup = savechain.decode('{"xs": [{"id": 1}, {"id": 1}]}')
  local ok, err = pcall(up.index_by, dup, "xs", "id")
  assert(not ok and err:find("xs[1]: id 1 appears twice", 1, true), err)
  local missing = savechain.decode('{"xs": [{"id": 1}, {"name": "b"}]}')
  ok, err = pcall(up.index_by, missing, "xs", "id")
  assert(not ok and err:find("xs[1] has no id", 1, true), err)
end

function tests.declared_paths_are_written_as_errors_write_them()
  up.take_dropped()
  local data = savechain.decode('{"a": {"b": 1, "c": 2, "x-y": 3, "1z": 4, "_q9": 5, "": 6}}')
  -- A list of keys is read as it is at each call, though a step changes it in between.
  local keys = { "a", "b" }
  assert(up.drop(data, keys))
  keys[2] = "c"
  assert(up.drop(data, keys))
  assert(not up.drop(data, "a.b"))
  assert(not up.drop(data, "a.b"))
  assert(up.drop(data, 'a["x-y"]') and up.drop(data, 'a["1z"]') and up.drop(data, "a._q9"))
  assert(up.drop(data, { "a", "" }))
  local dropped = table.concat(up.take_dropped(), " ")
  assert(dropped == 'a.b a.c a.b a.b a["x-y"] a["1z"] a._q9 a[""]', dropped)
  assert(next(data.a) == nil)
end

function tests.rename_refuses_to_overwrite()
  local data = sample()
  local ok, err = pcall(up.rename, data, "player.hp", "credits")
  assert(not ok and err:find("that key is taken", 1, true), err)
end

return tests
