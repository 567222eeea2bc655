-- The codec as every host sees it: the Rust core (tests/lua.rs, in the sandbox), and the
-- pure-Lua codec of lua/savechain.lua in stock Lua 5.1, 5.4 and LuaJIT (tests/lua_codecs.rs
-- runs this file there with lua/tests/run.lua). Lua 5.1 syntax. Where every number is a
-- double (math.type == nil: Lua 5.1, 5.2, LuaJIT), the documented differences hold: an
-- integral number from -2^53 to 2^53 (but -0.0) is an integer, an integer beyond 2^53 is
-- refused, a NaN keeps neither sign nor payload, and savechain.u64 stops at 2^53.
local savechain = require("savechain")

local DOUBLES_ONLY = math.type == nil

local function compact(value)
  return savechain.encode(value, { compact = true })
end

local function again(text)
  return compact(savechain.decode(text))
end

local function same(got, expected, what)
  if got ~= expected then
    error((what or "text") .. ": expected " .. tostring(expected) .. ", got " .. tostring(got), 2)
  end
end

local function fails_with(fn, expected)
  local ok, err = pcall(fn)
  if ok then error("expected an error containing " .. expected, 2) end
  if not string.find(tostring(err), expected, 1, true) then
    error("expected an error containing " .. expected .. ", got " .. tostring(err), 2)
  end
end

local tests = {}

function tests.canonical_text_passes_through_unchanged()
  for _, text in ipairs({
    '{"meta":{"version":1},"data":{"hp":["d","0x1.8p-3"]}}',
    '[1,-2,["d","0x1.999999999999ap-4"],["d","-0x0p+0"],["d","0x0.0000000000001p-1022"]]',
    '[["d","inf"],["d","-inf"],["d","nan"],["d","0x1.fffffffffffffp+1023"]]',
    '["Zo\195\171","tab\\there","nul\\u0000",["b","\\u00ff\\u0000a"],["b","abc"]]',
    '[["a",["d",5]],["a",["b",true]],["a",["x",[1]]],["d",5,6],["dd","x"]]',
    '["t",[[false,1],[true,2],[1,"a"],[3,"c"],["x","y"]]]',
    '{"a":["s",[1,{"name":"Sol"}]],"b":["r",[1]]}',
    '[null,true,false,[],{}]',
    '9007199254740992',
    '-9007199254740992',
  }) do
    same(again(text), text)
  end
end

function tests.pretty_layout()
  local text = savechain.encode(savechain.decode('{"b":[1,["d","0x1.8p-1"]],"a":{"x":[]},"c":["a",["d",5]]}'))
  same(text, '{\n  "a": {\n    "x": []\n  },\n  "b": [1, ["d", "0x1.8p-1"]],\n  "c": ["a", [\n    "d",\n    5\n  ]]\n}\n')
end

function tests.meta_first_at_the_top_level_alone()
  -- docs/FORMAT.md 5: the top-level object writes its "meta" first, then the others in
  -- bytewise order; every deeper object has all its keys in order.
  local save = { data = { meta = 1, a = { meta = 2, b = 3 } }, meta = { version = 4 }, b = 0 }
  same(compact(save), '{"meta":{"version":4},"b":0,"data":{"a":{"b":3,"meta":2},"meta":1}}')
  same(savechain.encode({ meta = 1, a = 2 }), '{\n  "meta": 1,\n  "a": 2\n}\n')
  same(again('{"data":{"hp":1},"meta":{"version":1}}'), '{"meta":{"version":1},"data":{"hp":1}}')
  same(compact({ a = 1 }), '{"a":1}')
  same(compact({ meta = 1 }), '{"meta":1}')
  -- Not at the top level: in an array, a class instance, a keyed table.
  same(compact({ { meta = 1, a = 2 } }), '[{"a":2,"meta":1}]')
  same(compact({ [true] = { meta = 1, a = 2 } }), '["t",[[true,{"a":2,"meta":1}]]]')
  -- A shared table is defined where the text first has it: in meta, written first.
  local shared = { 1 }
  same(compact({ a = shared, meta = { x = shared } }), '{"meta":{"x":["s",[1,[1]]]},"a":["r",[1]]}')
  same(compact({ { a = shared, meta = shared } }), '[{"a":["s",[1,[1]]],"meta":["r",[1]]}]')
  -- Tables as keys are ordered by their texts with every key in order, as before.
  same(compact({ [{ a = 1, meta = 2 }] = 1, [{ b = 0, meta = 1 }] = 2 }),
    '["t",[[{"a":1,"meta":2},1],[{"b":0,"meta":1},2]]]')
end

function tests.compressed_text_is_never_read_as_text()
  -- docs/FORMAT.md 12: zstd and gzip text is known by its first bytes. The one-file
  -- library reads plain text only and says so; the Rust core decompresses (this is not
  -- a whole stream, so it is damaged there).
  for _, case in ipairs({ { "\40\181\47\253garbage", "zstd" }, { "\31\139garbage", "gzip" } }) do
    local ok, err = pcall(savechain.decode, case[1])
    assert(not ok, case[2])
    assert(tostring(err):find(case[2], 1, true), tostring(err))
  end
end

function tests.integral_doubles()
  -- A double 3.0 in a save: a float on 5.3+, the integer 3 where numbers are doubles.
  if DOUBLES_ONLY then
    same(again('[["d","0x1.8p+1"],3.0,["d",100],["d","0x1p+53"]]'), "[3,3,100,9007199254740992]")
  else
    same(again('[["d","0x1.8p+1"],3.0,["d",100],["d","0x1p+53"]]'),
      '[["d","0x1.8p+1"],["d","0x1.8p+1"],["d","0x1.9p+6"],["d","0x1p+53"]]')
  end
  -- -0.0 stays a double everywhere, and doubles beyond 2^53 stay doubles.
  same(again('[["d","-0x0p+0"],["d","0x1.0000000000001p+53"],["d","0x1p+60"]]'),
    '[["d","-0x0p+0"],["d","0x1.0000000000001p+53"],["d","0x1p+60"]]')
  same(again('[1.5,-2.5e-3]'), '[["d","0x1.8p+0"],["d","-0x1.47ae147ae147bp-9"]]')
end

function tests.integers_beyond_2_53()
  local texts = { "9007199254740993", "-9007199254740993", "9223372036854775807", "18446744073709551615",
    '{"a":[1,9007199254740994]}' }
  for _, text in ipairs(texts) do
    if DOUBLES_ONLY then
      fails_with(function() savechain.decode(text) end, "beyond 2^53")
    else
      same(again(text), text)
    end
  end
  fails_with(function() savechain.decode("18446744073709551616") end, "18446744073709551616")
  fails_with(function() savechain.decode("-9223372036854775809") end, "-9223372036854775809")
end

function tests.u64()
  same(compact(savechain.u64("9007199254740992")), "9007199254740992")
  if DOUBLES_ONLY then
    fails_with(function() savechain.u64("9007199254740993") end, "2^53")
  else
    same(compact(savechain.u64("18446744073709551615")), "18446744073709551615")
  end
end

function tests.nans()
  same(again('["d","nan"]'), '["d","nan"]')
  if DOUBLES_ONLY then
    -- Neither sign nor payload is kept: a NaN is written "nan", one with a payload refused.
    same(again('["d","-nan"]'), '["d","nan"]')
    fails_with(function() savechain.decode('["d","nan:0x1"]') end, "NaN")
    same(compact(0 / 0), '["d","nan"]')
  else
    same(again('["d","-nan"]'), '["d","-nan"]')
    same(again('[["d","nan:0x1"],["d","-nan:0xfffffffffffff"]]'), '[["d","nan:0x1"],["d","-nan:0xfffffffffffff"]]')
  end
end

function tests.keys()
  -- On 5.1 the float key 1.0 is the key 1; on 5.3+ Lua makes it the integer 1.
  same(compact({ [1.0] = "a", [3] = "c" }), '["t",[[1,"a"],[3,"c"]]]')
  same(compact({ [1.5] = 1, [true] = 2, x = 3 }), '["t",[[true,2],[["d","0x1.8p+0"],1],["x",3]]]')
  fails_with(function() savechain.decode('["t",[[1,"a"],[["d","0x1p+0"],"b"]]]') end, "twice")
  fails_with(function() savechain.decode('["t",[[null,1]]]') end, "null")
end

function tests.strings_and_bytes()
  same(compact({ "\0\1\31\127", "\255", "caf\195\169" }), '["\\u0000\\u0001\\u001f\127",["b","\\u00ff"],"caf\195\169"]')
  same(compact(savechain.bytes("hi")), '["b","hi"]')
  fails_with(function() savechain.decode('"\255"') end, "UTF-8")
  fails_with(function() savechain.decode('["b","\\u0100"]') end, "U+00FF")
end

function tests.errors_name_line_and_column()
  fails_with(function() savechain.decode('{"a": 1,\n "b": 007}') end, "line 2, column 7")
  fails_with(function() savechain.decode('[1, 2,]') end, "line 1, column 7")
  fails_with(function() savechain.encode({ x = { print } }) end, "at x[1]: cannot save a function")
end

function tests.nesting_limit()
  local deep = string.rep("[", 512) .. string.rep("]", 512)
  same(again(deep), deep)
  fails_with(function() savechain.decode(string.rep("[", 513) .. string.rep("]", 513)) end, "512")
end

function tests.the_nesting_limit_of_decode_is_set_by_the_caller()
  local function nest(n) return string.rep("[", n) .. string.rep("]", n) end
  -- Where (the Rust core names the path too, after the place) and what.
  local function too_deep(text, place, limit)
    fails_with(function() savechain.decode(text) end, place .. ": ")
    fails_with(function() savechain.decode(text) end, "nested more than " .. limit .. " arrays and objects deep")
  end
  same(savechain.decode_max_depth(), 512, "the default limit")
  local ok, why = pcall(function()
    same(savechain.decode_max_depth(3), 3, "the limit set")
    same(savechain.decode_max_depth(), 3, "the limit kept")
    same(again(nest(3)), nest(3))
    too_deep(nest(4), "line 1, column 4", 3)
    -- Objects count, and tags count as arrays.
    same(again('{"a": {"b": [1, 2]}}'), '{"a":{"b":[1,2]}}')
    too_deep('{"a": {"b": [1, ["d", "0x1p+0"]]}}', "line 1, column 17", 3)
    too_deep('{"a":\n {"b": {"c": {}}}}', "line 2, column 14", 3)
    -- Loads read with it; encode writes what the format allows.
    fails_with(function()
      savechain.load('{"meta": {"version": 1}, "data": {"m": {"deep": []}}}', { version = 1 })
    end, "nested more than 3 arrays and objects deep")
    same(compact({ { { { 1 } } } }), nest(4):gsub("%]", "1]", 1))
    same(savechain.decode_max_depth(1), 1, "the least limit")
    same(again("[1]"), "[1]")
    too_deep("[[]]", "line 1, column 2", 1)
    same(savechain.decode_max_depth(512.0), 512, "an integral float")
    same(math.type and math.type(savechain.decode_max_depth()) or "integer", "integer", "the limit's type")
  end)
  savechain.decode_max_depth(512)
  if not ok then error(why, 0) end
  for _, bad in ipairs({ 0, 513, 2.5, -1, "10", true, 0 / 0, 1 / 0 }) do
    fails_with(function() savechain.decode_max_depth(bad) end,
      "savechain.decode_max_depth: the limit is an integer from 1 to 512 (the format never nests deeper), not ")
  end
  same(savechain.decode_max_depth(), 512, "the limit after refusals")
  same(again(nest(512)), nest(512))
end

function tests.the_version_is_a_version()
  -- The crates' (tests/versions.rs and tests/luarocks.rs hold it to Cargo.toml's).
  assert(string.match(tostring(savechain._VERSION), "^%d+%.%d+%.%d+$"), tostring(savechain._VERSION))
end

function tests.careless_calls_get_plain_messages()
  fails_with(function() savechain.array("abc") end, "savechain.array expects a table")
  fails_with(function() savechain.register("", { save = print, load = print }) end, "module name")
  fails_with(function() savechain.restore("{}") end, "savechain.restore expects the table")
  fails_with(function() savechain.encode({ [savechain.null] = 1 }) end, "cannot be a table key")
  fails_with(function() savechain.encode({}, "compact") end, "options are a table")
  fails_with(function() savechain.encode({}, { compat = true }) end, "the only option is compact")
  local ok, message = pcall(savechain.register_class, "\255", {})
  assert(not ok and tostring(message):find("UTF-8", 1, true), tostring(message))
end

function tests.a_failing_save_or_load_is_named()
  savechain.register("codec_test_failing", {
    save = function() error("kaboom") end,
    load = function() error("bang") end,
  })
  fails_with(function() savechain.collect() end, "the save function of codec_test_failing failed")
  fails_with(function() savechain.restore({}) end, "the load function of codec_test_failing failed")
end

return tests
