-- The pure-Lua codec run hot, for tests/luajit_hot.rs: enough long lists, deep chains,
-- tables of every shape and random values that LuaJIT compiles the codec's loops (and
-- gives up on some of them, which is when its compiler went wrong: issue 28, finding 1).
--
--   luajit lua/tests/drivers/hot_codec.lua OUT [jit-off]
--
-- Checks what it can alone (a list comes back with all its nodes, a chain with all its
-- levels, a text read and written again is the same text, too deep is refused with a
-- short message) and fails at the first wrong one, naming it. OUT gets every compact
-- text as "T <length>\n<text>\n" and every error as "E <length>\n<message>\n", for the
-- Rust test to compare across interpreters and with the compiler off (`jit-off`). No
-- table walk here uses next or pairs: the checks must not share the bug they look for.
-- Lua 5.1 syntax, numbers exact as doubles: the same values and texts in every stock
-- interpreter.

local out_path, mode = arg[1], arg[2]
if mode == "jit-off" and jit then jit.off() end
local s = require("savechain")
local out = assert(io.open(out_path, "wb"))

local function fail(format, ...)
  io.stderr:write("hot_codec: ", string.format(format, ...), "\n")
  os.exit(1)
end

local function record(kind, text)
  out:write(kind, " ", #text, "\n", text, "\n")
end

-- A text written compact and pretty, read back, and written again: the same text.
local function round_trip(value, what)
  local ok, compact = pcall(s.encode, value, { compact = true })
  if not ok then fail("%s: encode failed: %s", what, tostring(compact)) end
  local ok2, pretty = pcall(s.encode, value)
  if not ok2 then fail("%s: pretty encode failed: %s", what, tostring(pretty)) end
  local back = s.decode(compact)
  local again = s.encode(back, { compact = true })
  if again ~= compact then fail("%s: the text read and written again differs", what) end
  if s.encode(s.decode(pretty), { compact = true }) ~= compact then
    fail("%s: the pretty text reads as another value", what)
  end
  -- savechain.equal walks tables with pairs: hot, it met LuaJIT's compiler bug too.
  if not s.equal(back, value) then fail("%s: savechain.equal says the value read back differs", what) end
  record("T", compact)
  return back
end

-- Park-Miller: exact in doubles, so every interpreter draws the same numbers.
local seed = 20261127
local function draw(n)
  seed = seed * 16807 % 2147483647
  return seed % n
end

-- Linked lists, as a game keeps events: h = {id = i, text = "e" .. i, next = h} (each node
-- is a level: 512 at most).
local function list_check(n, what)
  local h
  for i = 1, n do h = { id = i, text = "e" .. i, next = h } end
  local back = round_trip(h, what)
  local count = 0
  while back ~= nil do
    count = count + 1
    local id = n - count + 1
    if back.id ~= id or back.text ~= "e" .. id then
      fail("%s: node %d came back as {id = %s, text = %s}", what, count, tostring(back.id), tostring(back.text))
    end
    back = back.next
  end
  if count ~= n then fail("%s: a list of %d nodes came back with %d", what, n, count) end
end

-- Chains {n = {n = ... {}}}: `levels` tables in all.
local function chain(levels, key)
  local h = {}
  for _ = 2, levels do h = { [key] = h } end
  return h
end

local function chain_check(levels, key, what)
  local back = round_trip(chain(levels, key), what)
  local count = 0
  while type(back) == "table" do
    count = count + 1
    back = back[key]
  end
  if count ~= levels then fail("%s: a chain of %d tables came back with %d", what, levels, count) end
end

local function too_deep_check(levels, what)
  local ok, err = pcall(s.encode, chain(levels, "n"))
  if ok then fail("%s: a chain of %d tables was written (at most 512 can be)", what, levels) end
  err = tostring(err)
  if not string.find(err, "nested more than 512", 1, true)
    or not string.find(err, "^at n%.n%.n%.n%.n%.n%.n%.n %.%.%. %d+ levels %.%.%. n%.n%.n%.n%.n%.n%.n%.n: ")
    or #err > 200 then
    fail("%s: the error for a chain of %d tables is %d characters: %s", what, levels, #err, string.sub(err, 1, 300))
  end
  record("E", err)
end

-- Tables of many shapes, small and nested: arrays, arrays with holes, objects, string and
-- integer keys mixed, boolean and fractional keys, empty tables, savechain.array.
local function shapes(i)
  local k = i % 9
  if k == 0 then return { i, i + 1, i + 2 } end
  if k == 1 then return { [1] = i, [3] = "three", [7] = true } end
  if k == 2 then return { name = "n" .. i, hp = i + 0.5, tags = { "a", "b" } } end
  if k == 3 then return { i, i * 2, x = "mixed", [10] = "far" } end
  if k == 4 then return { [true] = i, [false] = "no", [i + 0.25] = "frac" } end
  if k == 5 then return {} end
  if k == 6 then return s.array({}) end
  if k == 7 then return { inner = { inner = { inner = { i } } }, other = {} } end
  return { [1] = { a = 1 }, [2] = { b = 2 }, c = { [1] = "x", [2] = "y" } }
end

-- Random values: leaves, arrays, objects, keyed tables, lists and chains inside.
local function random_value(depth)
  local k = draw(12)
  if depth > 5 or k < 3 then
    local leaf = draw(5)
    if leaf == 0 then return draw(100000) - 50000 end
    if leaf == 1 then return "s" .. draw(50) end
    if leaf == 2 then return draw(1000) + 0.5 end
    if leaf == 3 then return draw(2) == 0 end
    return s.null
  elseif k < 5 then
    local t = {}
    for i = 1, draw(9) do t[i] = random_value(depth + 1) end
    return t
  elseif k < 8 then
    local t = {}
    for _ = 1, draw(7) do t["k" .. draw(20)] = random_value(depth + 1) end
    return t
  elseif k == 8 then
    local h
    for i = 1, 1 + draw(150) do h = { id = i, text = "e" .. i, next = h } end
    return h
  elseif k == 9 then
    return chain(1 + draw(200), "n")
  elseif k == 10 then
    local t = { x = 1 }
    for _ = 1, draw(6) do t[1 + draw(10)] = random_value(depth + 1) end
    return t
  end
  return shapes(draw(1000))
end

-- 1. The lists and chains of the report, cold, then again and again as the codec gets hot.
for round = 1, 12 do
  for _, n in ipairs({ 60, 200, 450, 512 }) do
    list_check(n, "round " .. round .. ", list of " .. n)
  end
  for _, levels in ipairs({ 100, 390, 511 }) do
    chain_check(levels, "n", "round " .. round .. ", chain of " .. levels)
  end
  chain_check(300, 1, "round " .. round .. ", chain of arrays")
  too_deep_check(513 + round * 40, "round " .. round)
end

-- 2. Many small tables, one by one and a thousand in one array.
for i = 1, 3000 do
  round_trip(shapes(i), "shape " .. i)
end
for round = 1, 5 do
  local many = {}
  for i = 1, 1000 do many[i] = shapes(i + round) end
  round_trip(many, "a thousand shapes, round " .. round)
end

-- 3. Random values, each written, read and written again.
for i = 1, 400 do
  round_trip({ random_value(0), random_value(0) }, "random value " .. i)
end

-- 4. The report's lists and chains once more, with everything above compiled.
for _, n in ipairs({ 60, 200, 450, 512 }) do list_check(n, "last list of " .. n) end
for _, levels in ipairs({ 390, 511 }) do chain_check(levels, "n", "last chain of " .. levels) end
too_deep_check(1000, "last")

out:close()
io.write("hot_codec: all checks passed\n")
