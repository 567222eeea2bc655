-- The pure-Lua codec of lua/savechain.lua against dkjson (Debian's lua-dkjson, without
-- LPeg), in one stock Lua process: Lua 5.4 or LuaJIT (docs/PERFORMANCE.md, "Issue 20").
--
--   cargo run --release --example bench_game_save -- target/bench
--   LUA_PATH="lua/?.lua;;" lua5.4 benches/lua/pure_vs_dkjson.lua \
--       target/bench/game.json target/bench/game.plain.json [RUNS]
--   LUA_PATH="lua/?.lua;;" luajit benches/lua/pure_vs_dkjson.lua \
--       target/bench/game.53bit.json target/bench/game.53bit.plain.json [RUNS]
--
-- savechain decodes the save's canonical text and encodes it back, pretty and canonical
-- (on Lua 5.4, byte for byte the same text, checked first). dkjson decodes and encodes the
-- same document twice: as plain JSON (decimal doubles, byte strings as arrays of
-- integers), and as savechain's own text (tagged doubles read as arrays of two strings,
-- which costs it less than reading numbers). LuaJIT gets the save with its integers beyond
-- 2^53 cut to 53 bits: LuaJIT's numbers are doubles, and the codec refuses to round them.
--
-- Each operation's time is the processor time (os.clock) of one call, best of RUNS
-- (default 3) runs in which the ways alternate, with a full collection before each timed
-- call, outside the timing; decode + encode is the best sum of one run's two calls.

-- timing.lua, beside this script.
package.path = (arg[0]:match("^(.*[/\\])") or "./") .. "?.lua;" .. package.path
local timing = require("timing")

local savechain = require("savechain")
local dkjson = require("dkjson")

local game_path, plain_path = arg[1], arg[2]
local runs = tonumber(arg[3] or "3") or 3
if game_path == nil or plain_path == nil then
  io.stderr:write("usage: lua5.4 benches/lua/pure_vs_dkjson.lua game.json game.plain.json [RUNS]\n")
  os.exit(2)
end
assert(package.loaded["savechain.core"] == nil and not package.cpath:find("savechain"),
  "this benchmark is of the pure-Lua codec: run it without the native module")


local text, plain = timing.read(game_path), timing.read(plain_path)
local MIB = 1024 * 1024

do
  local back = savechain.encode(savechain.decode(text))
  if math.type then
    assert(back == text, "savechain's round trip is not byte for byte")
    print(("savechain: %s round trip byte for byte (%.1f MiB)"):format(game_path, #text / MIB))
  else
    -- Every number is a double here: integral doubles come back as integers (FORMAT.md 8.1).
    print(("savechain: %s read and written (%.1f MiB; %s writes integral doubles as integers)")
      :format(game_path, #text / MIB, _VERSION))
  end
end

local ways = {
  { name = "savechain pure Lua", input = text, decode = savechain.decode, encode = savechain.encode },
  { name = "dkjson, plain JSON", input = plain, decode = dkjson.decode, encode = dkjson.encode },
  { name = "dkjson, savechain's text", input = text, decode = dkjson.decode, encode = dkjson.encode },
}

timing.compare(ways, runs)
