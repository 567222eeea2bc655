-- The Lua half of tests/lua_codecs.rs: runs a batch of cases through whatever `savechain`
-- the interpreter loads (the pure-Lua codec of lua/savechain.lua, or the native module)
-- and writes what happened, for the Rust test to compare with the Rust library.
--
--   lua5.4 lua/tests/drivers/codec_batch.lua texts  CASES OUT
--   lua5.4 lua/tests/drivers/codec_batch.lua values CASES OUT
--
-- `texts`: CASES holds save texts, each as "<length>\n<bytes>\n". Each is decoded; when
-- that works, the value is encoded pretty and compact, and the compact text decoded again
-- and compared with savechain.equal.
-- `values`: CASES is a Lua file returning a list of functions (s, Ship, V) -> value, which
-- build Lua values; each value is encoded, decoded and compared likewise.
--
-- A fourth argument `jit-off` turns LuaJIT's compiler off; a fifth, a number, is the
-- nesting limit of decoding (savechain.decode_max_depth).
--
-- OUT gets one record per step, "O <length>\n<text>\n" when the step worked and
-- "E <length>\n<message>\n" when it raised: the decoding (or building), then, when it
-- worked, the pretty text, the compact text and "equal" or "different" (or the error of
-- decoding the compact text). Lua 5.1 syntax: it runs in every stock interpreter.

local mode, input, output, options, max_depth = arg[1], arg[2], arg[3], arg[4], arg[5]
if options == "jit-off" and jit then jit.off() end
local s = require("savechain")
if max_depth then s.decode_max_depth(tonumber(max_depth)) end
local Ship = s.register_class("Ship", {})
local V = s.register_class("v", {})

local out = assert(io.open(output, "wb"))
local function put(ok, text)
  text = tostring(text)
  out:write(ok and "O" or "E", " ", #text, "\n", text, "\n")
end

local function encode_both(v)
  local ok, pretty = pcall(s.encode, v)
  put(ok, pretty)
  local ok2, compact = pcall(s.encode, v, { compact = true })
  put(ok2, compact)
  if not ok2 then
    put(false, "not encoded")
    return
  end
  local ok3, back = pcall(s.decode, compact)
  if ok3 then
    -- A text that is null decodes to nil (docs/FORMAT.md, section 8).
    if back == nil and v == s.null then back = s.null end
    put(true, s.equal(v, back) and "equal" or "different")
  else
    put(false, back)
  end
end

if mode == "texts" then
  local f = assert(io.open(input, "rb"))
  local data = f:read("*a")
  f:close()
  local at = 1
  while at <= #data do
    local nl = string.find(data, "\n", at, true)
    local len = tonumber(string.sub(data, at, nl - 1))
    local text = string.sub(data, nl + 1, nl + len)
    at = nl + len + 2
    local ok, v = pcall(s.decode, text)
    put(ok, ok and "decoded" or v)
    if ok then encode_both(v) end
  end
elseif mode == "values" then
  local builders = assert(loadfile(input))()
  for i = 1, #builders do
    local ok, v = pcall(builders[i], s, Ship, V)
    put(ok, ok and "built" or v)
    if ok then encode_both(v) end
  end
else
  error("usage: codec_batch.lua texts|values CASES OUT")
end
out:close()
