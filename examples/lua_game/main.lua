-- A small game in the shape of a LÖVE game (love.load, love.quit, love.filesystem) that keeps
-- its scripts' state in a savechain save with the one-file Lua library. It needs no native
-- code: lua/savechain.lua, copied into the game as people copy json.lua, reads and writes
-- the save in Lua 5.1 to 5.4, LuaJIT, or LÖVE itself.
--
-- Outside LÖVE it runs in a stock interpreter, with a stand-in for love.filesystem:
--
--   cd examples/lua_game && LUA_PATH="../../lua/?.lua;;" luajit main.lua
--
-- Each run loads the save (if any), plays a turn, and saves again; run it twice. The save is
-- a savechain save (meta and data), which save-upgrade shows, edits and upgrades: this
-- release (1.1.0) writes version 2 of the game's saves; a save of release 1.0.0 (version 1,
-- like old-save.json) is upgraded by the steps of upgrades/ first:
--
--   save-upgrade --upgrades upgrades/ --writer 1.1.0 save.json

local savechain = require("savechain")

-- What this release writes in every save's meta, and the version of saves it reads.
local SAVE = { version = 2, writer = "1.1.0", game = "Lua Example" }

love = love or {}
love.filesystem = love.filesystem or {
  -- The two calls of LÖVE's filesystem the game uses, on plain files.
  read = function(name)
    local f = io.open(name, "rb")
    if f == nil then return nil end
    local text = f:read("*a")
    f:close()
    return text
  end,
  write = function(name, text)
    local f = assert(io.open(name, "wb"))
    f:write(text)
    f:close()
    return true
  end,
}

-- The game's scripts: each module registers its state once.

local Ship = savechain.register_class("Ship", { __index = {
  describe = function(self) return self.name .. " (hull " .. self.hull .. ")" end,
} })

local function new_fleet()
  local kestrel = setmetatable({ name = "Kestrel", hull = 96.5, cargo = savechain.array() }, Ship)
  -- The same table twice: saved once, referred to after.
  return { ships = { kestrel }, flagship = kestrel }
end

-- The player's state changes shape through the game's upgrade steps (upgrades/): version 2
-- of the saves keeps credits in a wallet.
local player
savechain.register("player", {
  save = function() return player end,
  load = function(saved)
    player = saved or { name = "Ada", position = { 0.0, 0.0 }, wallet = { credits = 100, coins = 0 } }
  end,
})

-- The fleet module's state changed shape in its second release, inside the game: a state of
-- its first (no flagship) is upgraded by the module before `load` sees it.
local fleet
savechain.register("fleet", {
  version = 2,
  upgrades = {
    [1] = function(old) old.flagship = old.ships[1] end, -- changed in place
  },
  save = function() return fleet end,
  load = function(saved) fleet = saved or new_fleet() end,
})

function love.load()
  local text = love.filesystem.read("save.json")
  if text then
    -- Refused (with nothing loaded) when the save is of another game, of a newer release,
    -- or of an older one that its upgrade steps have not brought to this version yet.
    savechain.load(text, { version = SAVE.version, game = SAVE.game })
    print("loaded turn " .. (player.turn or 0) .. ", flagship " .. fleet.flagship:describe())
  else
    savechain.restore({}) -- every module starts anew
    print("new game")
  end
end

function love.quit()
  player.turn = (player.turn or 0) + 1
  player.wallet.credits = player.wallet.credits + 25
  assert(love.filesystem.write("save.json", savechain.save(SAVE)))
  print("saved turn " .. player.turn .. " with " .. player.wallet.credits .. " credits")
end

-- LÖVE calls these itself; a plain interpreter runs them in order.
if not love.run then
  love.load()
  assert(fleet.flagship == fleet.ships[1], "the flagship is still one of the ships")
  love.quit()
end
