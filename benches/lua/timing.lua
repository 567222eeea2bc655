-- What the Lua benchmarks of benches/lua/ share: reading a file, and timing ways of
-- decoding and encoding a document side by side (docs/PERFORMANCE.md, "Issue 20").
-- Lua 5.1 syntax: it runs in every stock interpreter.

local M = {}

-- The whole file at `path`, as bytes.
function M.read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  return text
end

local function timed(f, x)
  collectgarbage("collect")
  local start = os.clock()
  local y = f(x)
  return os.clock() - start, y
end

-- Times each way ({name, input, decode, encode}): best of `runs` runs in which the ways
-- alternate, each call's processor time (os.clock) with a full collection before it,
-- outside the timing; decode + encode is the best sum of one run's two calls. Prints the
-- table, then each other way's times as ratios to the first way's.
function M.compare(ways, runs)
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
  local MIB = 1024 * 1024
  print()
  print(("best of %d runs, %s, processor time"):format(runs, jit and jit.version or _VERSION))
  print(("%-30s %12s %12s %16s %8s"):format("way", "decode ms", "encode ms", "decode+encode ms", "MiB/s"))
  for _, way in ipairs(ways) do
    print(("%-30s %12.1f %12.1f %16.1f %8.1f"):format(way.name, way.best_decode * 1e3,
      way.best_encode * 1e3, way.best_both * 1e3, #way.input / MIB / way.best_both))
  end
  print()
  local first = ways[1]
  for i = 2, #ways do
    local other = ways[i]
    print(("%s / %s: decode %.2fx, encode %.2fx, decode+encode %.2fx"):format(other.name,
      first.name, other.best_decode / first.best_decode, other.best_encode / first.best_encode,
      other.best_both / first.best_both))
  end
end

return M
