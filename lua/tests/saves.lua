-- Whole saves of the registered modules (issue 28): savechain.save writes a save with meta
-- and data, savechain.load restores one. Lua 5.1 syntax and numbers: it runs in every host
-- (the sandbox, the native module, the one-file library in lua5.1, lua5.4 and LuaJIT).
local savechain = require("savechain")

local tests = {}

local fleet, wallet = nil, nil

local function register_modules()
  savechain.register("fleet", {
    save = function() return fleet end,
    load = function(state) fleet = state end,
  })
  -- The wallet's state changed shape in its version 2: credits moved into coins.
  savechain.register("wallet", {
    version = 2,
    upgrades = { [1] = function(old) return { coins = old.credits } end },
    save = function() return wallet end,
    load = function(state) wallet = state end,
  })
end

local function fails_with(expected, fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error containing " .. expected)
  assert(tostring(err):find(expected, 1, true), "expected " .. expected .. ", got " .. tostring(err))
end

function tests.save_writes_meta_and_data()
  register_modules()
  fleet, wallet = { ships = { "Kestrel" } }, { coins = 125 }
  local text = savechain.save({ version = 4, writer = "1.2.0", game = "Test Game" })
  local save = savechain.decode(text)
  assert(save.meta.version == 4 and save.meta.writer == "1.2.0" and save.meta.game == "Test Game", text)
  -- Each versioned module's version in meta, under a key of its own; none in data.
  assert(save.meta.modules.wallet == 2 and save.meta.modules.fleet == nil, text)
  assert(save.data.fleet.ships[1] == "Kestrel" and save.data.wallet.coins == 125, text)
  assert(save.data["savechain.versions"] == nil, text)
  -- Canonical text, as encode writes it, meta first; compact on request.
  assert(savechain.encode(save) == text, text)
  assert(text:sub(1, 13) == '{\n  "meta": {', text)
  local compact = savechain.save({ version = 4, compact = true })
  assert(not compact:find("\n", 1, true), compact)
  assert(compact:find('{"meta":{"modules":{"wallet":2},"version":4},"data":{', 1, true) == 1, compact)
end

function tests.load_restores_every_module_and_returns_meta()
  register_modules()
  fleet, wallet = { ships = { "Osprey" } }, { coins = 7 }
  local text = savechain.save({ version = 3, writer = "2.0.0-beta.1", game = "Test Game" })
  fleet, wallet = nil, nil
  local meta = savechain.load(text, { version = 3, game = "Test Game" })
  assert(fleet.ships[1] == "Osprey" and wallet.coins == 7)
  assert(meta.version == 3 and meta.writer == "2.0.0-beta.1" and meta.modules.wallet == 2)
  -- Without a game named, any game's save of that version loads.
  fleet = nil
  savechain.load(text, { version = 3 })
  assert(fleet.ships[1] == "Osprey")
end

function tests.load_upgrades_module_states_by_their_versions_in_meta()
  register_modules()
  -- The wallet at version 1 (credits at the top); a save with no modules recorded is 1 too.
  local v1 = '{"data": {"wallet": {"credits": 40}}, "meta": {"modules": {"wallet": 1}, "version": 1}}'
  savechain.load(v1, { version = 1 })
  assert(wallet.coins == 40 and wallet.credits == nil)
  wallet = nil
  savechain.load('{"data": {"wallet": {"credits": 41}}, "meta": {"version": 1}}', { version = 1 })
  assert(wallet.coins == 41)
  -- A state from a newer build of the module is refused, and nothing is loaded.
  fleet = "before"
  fails_with("newer than the module (version 2)", savechain.load,
    '{"data": {"fleet": "after", "wallet": {}}, "meta": {"modules": {"wallet": 3}, "version": 1}}',
    { version = 1 })
  assert(fleet == "before")
end

function tests.load_refuses_saves_of_other_versions_and_games_and_loads_nothing()
  register_modules()
  fleet, wallet = { ships = {} }, { coins = 1 }
  local text = savechain.save({ version = 5, game = "Test Game" })
  fleet = "unchanged"
  fails_with("the save is version 5, newer than this game's (version 4)", savechain.load, text, { version = 4 })
  fails_with("the save is version 5, and this game reads version 6: upgrade it with the game's steps first",
    savechain.load, text, { version = 6 })
  fails_with('the save is of the game "Test Game", and this is "Other"', savechain.load, text,
    { version = 5, game = "Other" })
  local nameless = savechain.save({ version = 5 })
  fails_with("the save names no game (meta.game)", savechain.load, nameless, { version = 5, game = "Test Game" })
  assert(fleet == "unchanged")
end

function tests.load_refuses_what_is_not_a_save()
  register_modules()
  fails_with('not a save: no "meta" member', savechain.load, savechain.encode(savechain.collect()), { version = 1 })
  fails_with("not a save", savechain.load, "[1, 2]", { version = 1 })
  fails_with('a member extra beside "meta" and "data"', savechain.load,
    '{"data": {}, "extra": 1, "meta": {"version": 1}}', { version = 1 })
  fails_with("meta.version must be an integer from 0", savechain.load,
    '{"data": {}, "meta": {"version": "1"}}', { version = 1 })
  fails_with("line 1, column 9", savechain.load, '{"data":}', { version = 1 })
  fails_with("savechain.load expects the text of a save", savechain.load, nil, { version = 1 })
end

function tests.save_and_load_check_their_options()
  register_modules()
  fails_with("savechain.save expects a table of options", savechain.save)
  fails_with("version is the game's save version, an integer from 0", savechain.save, {})
  fails_with("version is the game's save version", savechain.save, { version = -1 })
  fails_with("version is the game's save version", savechain.save, { version = 1.5 })
  -- A string is shown in quotes: "1" is not taken for 1.
  fails_with('the version its upgrade steps reach), not "1"', savechain.save, { version = "1" })
  fails_with("unknown option verison", savechain.save, { verison = 1 })
  fails_with('writer is the game\'s release, a semantic version such as "1.2.0"', savechain.save,
    { version = 1, writer = "1.2" })
  fails_with("writer is the game's release", savechain.save, { version = 1, writer = "01.2.3" })
  fails_with("game is the game's name", savechain.save, { version = 1, game = 5 })
  fails_with("compact is true or false", savechain.save, { version = 1, compact = "yes" })
  fails_with("savechain.load expects a table of options", savechain.load, "{}")
  fails_with("unknown option compact", savechain.load, "{}", { version = 1, compact = true })
  -- Semantic versions with a pre-release and build metadata are writers.
  savechain.save({ version = 0, writer = "1.0.0-rc.1+build.5" })
end

function tests.states_of_modules_not_registered_are_kept_with_their_versions()
  register_modules()
  savechain.load('{"data": {"retired": {"x": 1}}, "meta": {"modules": {"retired": 4}, "version": 2}}',
    { version = 2 })
  local save = savechain.decode(savechain.save({ version = 2 }))
  assert(save.data.retired.x == 1 and save.meta.modules.retired == 4)
end

function tests.the_rest_of_meta_is_kept_from_the_save_loaded()
  -- A save upgraded by save-upgrade has a history; the game's next save keeps it, as it
  -- keeps a member of the game's own, and writes its own version, writer and game.
  register_modules()
  savechain.load('{"data": {"fleet": 1}, "meta": {"game": "Test Game", "history": '
    .. '[{"from": 1, "to": 2, "writer": "1.1.0"}], "slot": 3, "version": 2, "writer": "1.1.0"}}',
    { version = 2 })
  local meta = savechain.decode(savechain.save({ version = 2, writer = "1.2.0" })).meta
  assert(meta.history[1].to == 2 and meta.history[1].writer == "1.1.0" and meta.slot == 3)
  assert(meta.writer == "1.2.0" and meta.game == nil and meta.modules.wallet == 2)
  -- A game started anew (restore) has nothing of it.
  savechain.restore({})
  meta = savechain.decode(savechain.save({ version = 2 })).meta
  assert(meta.history == nil and meta.slot == nil)
end

function tests.a_failing_load_leaves_the_states_and_meta_of_one_save()
  -- The meta kept for the next save is the one of the save whose states are kept: a load
  -- that fails part way must not pair one save's unregistered states with another's history.
  register_modules()
  savechain.load('{"data": {"retired": {"x": 1}}, "meta": {"history": [{"from": 1, "to": 2}], '
    .. '"modules": {"retired": 4}, "version": 2}}', { version = 2 })
  savechain.register("wallet", {
    save = function() return wallet end,
    load = function(state) if state and state.broken then error("cannot read it") end end,
  })
  fails_with("the load function of wallet failed", savechain.load,
    '{"data": {"other": 5, "wallet": {"broken": true}}, "meta": {"version": 2}}', { version = 2 })
  local save = savechain.decode(savechain.save({ version = 2 }))
  assert(save.data.other == 5 and save.data.retired == nil, "the failed save's states are kept")
  assert(save.meta.history == nil, "the meta kept is the failed save's, as its states are")
end

function tests.encode_of_collect_is_as_it_was()
  register_modules()
  fleet, wallet = { ships = {} }, { coins = 3 }
  local text = savechain.encode(savechain.collect(), { compact = true })
  assert(text:find('"savechain.versions":{"wallet":2}', 1, true) and not text:find('"meta"', 1, true), text)
  wallet = nil
  savechain.restore(savechain.decode(text))
  assert(wallet.coins == 3)
end

return tests
