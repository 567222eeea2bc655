-- The native module (lua-module/) against lua-cjson, in one stock Lua 5.4 process: the game
-- save's text decoded to Lua tables and encoded back (docs/PERFORMANCE.md, "Issue 20").
--
--   cargo run --release --example bench_game_save -- target/bench
--   cargo build --release -p savechain-lua
--   LUA_CPATH="target/release/lib?_lua.so;;" lua5.4 benches/lua/native_vs_cjson.lua \
--       target/bench/game.json target/bench/game.plain.json [RUNS]
--
-- savechain decodes the save's canonical text (game.json) and encodes it back, pretty and
-- canonical, byte for byte the same (checked first); lua-cjson (Debian's lua-cjson,
-- require("cjson")) decodes the same document as plain JSON (game.plain.json: decimal
-- doubles, byte strings as arrays of integers) and encodes it back compact, the only way it
-- writes, losing what its number formatting cannot keep (counted first: it reads every
-- number as a float and writes 14 significant digits). Two more rows: savechain encoding
-- compact text ({compact = true}: one line, as lua-cjson writes), and lua-cjson on
-- savechain's own text, whose tagged doubles it reads as arrays of two strings.
--
-- Each operation's time is the processor time (os.clock) of one call, best of RUNS
-- (default 5) runs in which the ways alternate, with a full collection before each timed
-- call, outside the timing; decode + encode is the best sum of one run's two calls.

-- timing.lua, beside this script.
package.path = (arg[0]:match("^(.*[/\\])") or "./") .. "?.lua;" .. package.path
local timing = require("timing")

local savechain = require("savechain")
local cjson = require("cjson")

local game_path, plain_path = arg[1], arg[2]
local runs = math.tointeger(tonumber(arg[3] or "5")) or 5
if game_path == nil or plain_path == nil then
  io.stderr:write("usage: lua5.4 benches/lua/native_vs_cjson.lua game.json game.plain.json [RUNS]\n")
  os.exit(2)
end


local text, plain = timing.read(game_path), timing.read(plain_path)
local MIB = 1024 * 1024

-- What each way keeps, checked once before timing -------------------------------------

do
  local back = savechain.encode(savechain.decode(text))
  assert(back == text, "savechain's round trip is not byte for byte")
  print(("savechain: %s round trip byte for byte (%.1f MiB)"):format(game_path, #text / MIB))
end

-- Numbers of `a` that differ in `b` (same shapes), and the numbers seen.
local function lost_numbers(a, b)
  local changed, seen = 0, 0
  local function walk(x, y)
    if type(x) == "number" then
      seen = seen + 1
      if x ~= y or math.type(x) ~= math.type(y) then changed = changed + 1 end
    elseif type(x) == "table" and type(y) == "table" then
      for k, v in pairs(x) do walk(v, y[k]) end
    end
  end
  walk(a, b)
  return changed, seen
end

do
  local decoded = cjson.decode(plain)
  local again = cjson.decode(cjson.encode(decoded))
  local changed, seen = lost_numbers(decoded, again)
  print(("lua-cjson %s: %d of %d numbers read back different after its round trip"):format(
    cjson._VERSION or "?", changed, seen))
  -- Against what the save holds: savechain's values are the exact ones.
  local integers = 0
  local function count(x)
    if math.type(x) == "integer" then integers = integers + 1 end
    if type(x) == "table" then
      for _, v in next, x do count(v) end
    end
  end
  count(savechain.decode(text))
  print(("savechain reads %d integers as integers, every double to the bit; lua-cjson reads every number as a float"):format(integers))
end

-- Timing ---------------------------------------------------------------------------------

local COMPACT = { compact = true }
local ways = {
  {
    name = "savechain native",
    input = text,
    decode = savechain.decode,
    encode = savechain.encode,
  },
  {
    name = "savechain native, compact",
    input = text,
    decode = savechain.decode,
    encode = function(value) return savechain.encode(value, COMPACT) end,
  },
  {
    name = "lua-cjson, plain JSON",
    input = plain,
    decode = cjson.decode,
    encode = cjson.encode,
  },
  {
    name = "lua-cjson, savechain's text",
    input = text,
    decode = cjson.decode,
    encode = cjson.encode,
  },
}

timing.compare(ways, runs)
