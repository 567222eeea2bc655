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

local function read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  return text
end

local text, plain = read(game_path), read(plain_path)
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

local function timed(f, x)
  collectgarbage("collect")
  local start = os.clock()
  local y = f(x)
  return os.clock() - start, y
end

for _, way in ipairs(ways) do
  way.best_decode, way.best_encode, way.best_both = math.huge, math.huge, math.huge
end
for run = 1, runs do
  for _, way in ipairs(ways) do
    local d, value = timed(way.decode, way.input)
    local e = timed(way.encode, value)
    value = nil
    way.best_decode = math.min(way.best_decode, d)
    way.best_encode = math.min(way.best_encode, e)
    way.best_both = math.min(way.best_both, d + e)
  end
  io.stderr:write(("run %d of %d done\n"):format(run, runs))
end

print()
print(("best of %d runs, %s, %s"):format(runs, jit and jit.version or _VERSION, "processor time"))
print(("%-30s %12s %12s %16s %8s"):format("way", "decode ms", "encode ms", "decode+encode ms", "MiB/s"))
for _, way in ipairs(ways) do
  print(("%-30s %12.1f %12.1f %16.1f %8.1f"):format(way.name, way.best_decode * 1e3,
    way.best_encode * 1e3, way.best_both * 1e3, #way.input / MIB / way.best_both))
end
print()
local pure = ways[1]
for i = 2, #ways do
  local other = ways[i]
  print(("%s / savechain pure Lua: decode %.2fx, encode %.2fx, decode+encode %.2fx"):format(
    other.name, other.best_decode / pure.best_decode, other.best_encode / pure.best_encode,
    other.best_both / pure.best_both))
end
