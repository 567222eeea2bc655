-- A small game in the shape of a LÖVE game (love.load, love.quit, love.filesystem) that keeps
-- its scripts' state in a save with savechain's one-file Lua library. It needs no native
-- code: lua/savechain.lua, copied into the game as people copy json.lua, reads and writes
-- the save in Lua 5.1 to 5.4, LuaJIT, or LÖVE itself.
--
-- Outside LÖVE it runs in a stock interpreter, with a stand-in for love.filesystem:
--
--   cd examples/lua_game && LUA_PATH="../../lua/?.lua;;" luajit main.lua
--
-- Each run loads the save (if any), plays a turn, and saves again; run it twice.

local savechain = require("savechain")

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

local fleet = { ships = {}, flagship = nil }
savechain.register("fleet", {
  save = function() return fleet end,
  load = function(saved) fleet = saved or { ships = {} } end,
})

-- The economy module's state changed shape in its second release: a save of the first
-- (credits at the top) is upgraded before `load` sees it.
local economy = { wallet = { credits = 100 }, turn = 0 }
savechain.register("economy", {
  version = 2,
  upgrades = {
    [1] = function(old) return { wallet = { credits = old.credits }, turn = old.turn or 0 } end,
  },
  save = function() return economy end,
  load = function(saved) economy = saved or economy end,
})

function love.load()
  local text = love.filesystem.read("save.json")
  if text then
    savechain.restore(savechain.decode(text))
    print("loaded turn " .. economy.turn .. ", flagship " .. fleet.flagship:describe())
  else
    local kestrel = setmetatable({ name = "Kestrel", hull = 96.5, cargo = savechain.array() }, Ship)
    fleet.ships[1] = kestrel
    fleet.flagship = kestrel -- the same table twice: saved once, referred to after
    print("new game")
  end
end

function love.quit()
  economy.turn = economy.turn + 1
  economy.wallet.credits = economy.wallet.credits + 25
  assert(love.filesystem.write("save.json", savechain.encode(savechain.collect())))
  print("saved turn " .. economy.turn .. " with " .. economy.wallet.credits .. " credits")
end

-- LÖVE calls these itself; a plain interpreter runs them in order.
if not love.run then
  love.load()
  assert(fleet.flagship == fleet.ships[1], "the flagship is still one of the ships")
  love.quit()
end
