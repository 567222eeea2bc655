-- The Lua side of the mapping: every kind of value comes back as it went in.
local savechain = require("savechain")

local function round_trip(value)
  return savechain.decode(savechain.encode(value))
end

local function check_round_trip(value, what)
  local back = round_trip(value)
  if not savechain.equal(value, back) then
    error(what .. ": came back different:\n" .. savechain.encode(back), 2)
  end
  return back
end

local function bits(hex)
  return string.unpack("<d", string.pack("<i8", math.tointeger(hex)))
end

local function fails_with(fn, expected)
  local ok, err = pcall(fn)
  assert(not ok, "expected an error containing " .. expected)
  assert(tostring(err):find(expected, 1, true), "expected " .. expected .. ", got " .. tostring(err))
end

local tests = {}

function tests.errors_are_plain_messages()
  local ok, e = pcall(savechain.decode, '{"a": 1,}')
  assert(not ok and type(e) == "string", tostring(e))
  assert(e == "line 1, column 9: expected another key after ',' (JSON allows no trailing comma), found '}'", e)
  ok, e = pcall(savechain.encode, { ship = { on_dock = print } })
  assert(not ok and e == "at ship.on_dock: cannot save a function", e)
  ok, e = pcall(savechain.decode, nil)
  assert(not ok and e:find("savechain.decode expects a string", 1, true), e)
end

function tests.scalars_keep_their_subtypes()
  local back = check_round_trip({ 3, 3.0, -0.0, 0.0, 1 / 0, -1 / 0, math.maxinteger, math.mininteger, 0.1, true, false }, "scalars")
  assert(math.type(back[1]) == "integer" and math.type(back[2]) == "float")
  assert(1 / back[3] == -1 / 0, "-0.0 keeps its sign")
  assert(back[7] == math.maxinteger and back[8] == math.mininteger)
end

function tests.every_float_bit_pattern()
  local patterns = {
    0x7ff8000000000000, 0x7ff0000000000001, 0xfff8000000000001, 0x7ff4000000000000,
    0x0000000000000001, 0x000fffffffffffff, 0x7fefffffffffffff, -1,
  }
  local floats = {}
  for i, p in ipairs(patterns) do
    floats[i] = bits(p)
  end
  local back = check_round_trip(floats, "floats")
  for i = 1, #floats do
    assert(string.pack("<d", back[i]) == string.pack("<d", floats[i]), "pattern " .. i)
  end
end

function tests.strings_are_bytes()
  local back = check_round_trip({ "plain", "Zoë ✓", "nul\0inside", "\255\254", "" }, "strings")
  assert(back[3] == "nul\0inside" and back[4] == "\255\254")
  local text = savechain.encode({ "\255" }, { compact = true })
  assert(text == '[["b","\\u00ff"]]', text)
end

function tests.byte_strings_that_read_as_text_stay_byte_strings()
  local value = savechain.decode('{"blob": ["b", "abc"], "empty": ["b", ""], "raw": ["b", "\\u00ff"], "text": "abc"}')
  assert(savechain.is_bytes(value.blob) and tostring(value.blob) == "abc" and #value.blob == 3)
  assert(savechain.is_bytes(value.empty) and value.raw == "\255" and value.text == "abc")
  local text = savechain.encode(value, { compact = true })
  assert(text == '{"blob":["b","abc"],"empty":["b",""],"raw":["b","\\u00ff"],"text":"abc"}', text)
  assert(savechain.encode(savechain.bytes("hi"), { compact = true }) == '["b","hi"]')
  assert(savechain.bytes("x") == savechain.bytes("x"))
end

function tests.sequences_objects_and_keyed_tables()
  local cases = {
    { 1, 2, 3 },
    { x = 1, y = "z" },
    { [1] = "a", [3] = "c" },
    { [0] = "zero", [-1] = "minus one" },
    { [1.5] = "float key", [true] = "bool key", [false] = 0 },
    { 10, 20, x = "y" },
    { [1] = "integer one", ["1"] = "string one" },
    { [{ "a table key" }] = "value" },
    { ["\255"] = "byte-string key" },
  }
  for i, case in ipairs(cases) do
    check_round_trip(case, "case " .. i)
  end
  assert(savechain.encode({ 1, 2 }, { compact = true }) == "[1,2]")
  assert(savechain.encode({ x = 1 }, { compact = true }) == '{"x":1}')
  assert(savechain.encode({ [1] = "a", [3] = "c" }, { compact = true }) == '["t",[[1,"a"],[3,"c"]]]')
  assert(savechain.encode({ 10, 20, x = "y" }, { compact = true }) == '["t",[[1,10],[2,20],["x","y"]]]')
end

function tests.shared_tables_and_cycles()
  local sol = { name = "Sol" }
  local state = { home = sol, current = sol, route = { sol, sol } }
  state.self = state
  local back = check_round_trip(state, "shared")
  assert(back.home == back.current and back.route[1] == back.home and back.self == back)
  assert(savechain.encode({ a = sol, b = sol }, { compact = true }) == '{"a":["s",[1,{"name":"Sol"}]],"b":["r",[1]]}')
end

function tests.same_state_same_bytes()
  -- Build the same state twice in different orders: the text must not differ.
  local function build(reverse)
    local shared = { kind = "station" }
    local t = {}
    local names = { "alpha", "beta", "gamma", "delta", "epsilon", "zeta" }
    local from, to, step = 1, #names, 1
    if reverse then from, to, step = #names, 1, -1 end
    for i = from, to, step do
      t[names[i]] = { id = i, base = shared }
    end
    t[{ "k" }] = shared
    return t
  end
  local a, b = savechain.encode(build(false)), savechain.encode(build(true))
  assert(a == b, "different bytes:\n" .. a .. "\n" .. b)
end

function tests.a_text_that_is_null_decodes_to_nil()
  -- As decode promises in every host (issue 28: the Rust core gave savechain.null); null
  -- inside a value stays savechain.null, which a table can hold.
  assert(savechain.decode("null") == nil)
  assert(select("#", savechain.decode(" null\n")) == 1)
  assert(savechain.decode("[null]")[1] == savechain.null)
  assert(savechain.encode(savechain.null, { compact = true }) == "null")
end

function tests.null_and_empty_containers_survive()
  local value = savechain.decode('{"gone": null, "list": [], "map": {}, "inner": [null, 1]}')
  assert(value.gone == savechain.null and value.inner[1] == savechain.null)
  assert(savechain.is_array(value.list) and not savechain.is_array(value.map))
  assert(savechain.encode(value, { compact = true }) == '{"gone":null,"inner":[null,1],"list":[],"map":{}}')
  assert(savechain.encode(savechain.array(), { compact = true }) == "[]")
  assert(savechain.encode({}, { compact = true }) == "{}")
end

function tests.integers_above_maxinteger_are_boxed()
  local value = savechain.decode("[18446744073709551615, 9223372036854775808]")
  assert(tostring(value[1]) == "18446744073709551615", tostring(value[1]))
  assert(tostring(value[2]) == "9223372036854775808")
  assert(value[2] < value[1] and value[1] == savechain.u64("18446744073709551615"))
  assert(savechain.u64("42") == 42)
  assert(savechain.encode(value, { compact = true }) == "[18446744073709551615,9223372036854775808]")
  fails_with(function() savechain.u64("18446744073709551616") end, "expects the decimal digits")
end

function tests.classes_come_back_with_their_metatable()
  local Ship = { __index = { describe = function(self) return self.name end } }
  savechain.register_class("Ship", Ship)
  local ship = setmetatable({ name = "Kestrel" }, Ship)
  local text = savechain.encode({ ship = ship, again = ship }, { compact = true })
  assert(text == '{"again":["s",[1,["c",["Ship",{"name":"Kestrel"}]]]],"ship":["r",[1]]}', text)
  local back = savechain.decode(text)
  assert(getmetatable(back.ship) == Ship and back.ship:describe() == "Kestrel" and back.again == back.ship)
  fails_with(function() savechain.register_class("Ship", {}) end, "already registered")
  fails_with(function() savechain.decode('["c", ["Unknown", {}]]') end, 'class "Unknown" is not registered')
  -- Named at the tag's content, as every error of what a tag holds (issue 28).
  fails_with(function() savechain.decode('["c", ["Unknown", {}]]') end, "line 1, column 7: ")
end

function tests.what_cannot_be_saved_is_named_with_its_path()
  fails_with(function()
    savechain.encode({ missions = { {}, {}, { on_complete = function() end } } })
  end, "at missions[3].on_complete: cannot save a function")
  fails_with(function() savechain.encode({ co = coroutine.create(function() end) }) end, "at co: cannot save a thread")
  fails_with(function() savechain.encode({ x = setmetatable({}, {}) }) end, "not a registered class")
  fails_with(function() savechain.encode({ [tostring] = 1 }) end, "cannot save a function")
  fails_with(function() savechain.decode('["r", [4]]') end, "never defined")
  fails_with(function() savechain.decode('{"a": 1,\n "b": ["r", [4]]}') end, "line 2, column 13: ")
end

function tests.deep_nesting_is_refused_not_crashed()
  local list = {}
  for _ = 1, 1000 do list = { next = list } end
  fails_with(function() savechain.encode(list) end, "nested more than 512 deep")
end

return tests
