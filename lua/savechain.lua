-- savechain: Lua values in saves, and the saved state of a game's script modules.
--
--   local savechain = require("savechain")
--   savechain.register("economy", {
--     save = function() return economy.state end,
--     load = function(state) economy.state = state or economy.new_state() end,
--   })
--   local text = savechain.encode(savechain.collect())   -- or let the game save it
--   savechain.restore(savechain.decode(text))
--
-- docs/FORMAT.md (section 8) says what each Lua value becomes in a save.

local _, require = ...
local core = require("savechain.core")

local M = {}

-- JSON null. A null read from a save arrives as this value (a table cannot hold nil) and
-- is written back as null.
M.null = core.null

-- Marks `t` (or a new table) as an array, so that it is saved as [] even when empty.
-- Arrays read from a save that are empty arrive marked.
function M.array(t)
  t = t or {}
  local mt = getmetatable(t)
  if mt ~= nil and mt ~= core.array_mt then
    error("savechain.array: the table already has a metatable", 2)
  end
  return setmetatable(t, core.array_mt)
end

function M.is_array(t)
  return getmetatable(t) == core.array_mt
end

-- Integers above math.maxinteger (up to 2^64 - 1) arrive boxed: tostring gives their
-- decimal digits, == and < compare them, and they are written back unchanged.
local U64 = core.u64_mt

U64.__tostring = function(u)
  local n = u[1]
  if n >= 0 then
    return string.format("%d", n)
  end
  -- Unsigned division by 10 of the 64 bits: halve (logical shift), then divide by 5.
  local q = (n >> 1) // 5
  return string.format("%d%d", q, n - q * 10)
end
U64.__eq = function(a, b) return a[1] == b[1] end
U64.__lt = function(a, b) return math.ult(a[1], b[1]) end
U64.__le = function(a, b) return a[1] == b[1] or math.ult(a[1], b[1]) end

-- Byte strings that are valid UTF-8 arrive boxed (Lua strings cannot say whether they are
-- text or bytes): b[1] or tostring(b) is the string, #b its length, and the box is written
-- back as the same byte string. Other byte strings arrive as plain strings.
local BYTES = core.bytes_mt

BYTES.__tostring = function(b) return b[1] end
BYTES.__len = function(b) return #b[1] end
BYTES.__eq = function(a, b) return a[1] == b[1] end

-- A byte string of `s`, saved as ["b", ...] even when `s` is text.
function M.bytes(s)
  if type(s) ~= "string" then
    error("savechain.bytes expects a string", 2)
  end
  return setmetatable({ s }, BYTES)
end

function M.is_bytes(b)
  return getmetatable(b) == BYTES
end

local U64_MAX = "18446744073709551615"

-- A u64 from its decimal digits ("18446744073709551615").
function M.u64(digits)
  if type(digits) ~= "string" or not digits:match("^%d+$")
    or #digits > #U64_MAX or (#digits == #U64_MAX and digits > U64_MAX) then
    error("savechain.u64 expects the decimal digits of an integer from 0 to " .. U64_MAX, 2)
  end
  local n = 0
  for i = 1, #digits do
    n = n * 10 + (digits:byte(i) - 48) -- wraps around modulo 2^64, as wanted
  end
  if n >= 0 then
    return n
  end
  return setmetatable({ n }, U64)
end

-- Registers `metatable` as the class `name`: tables with it are saved as
-- ["c", ["name", {...}]] and get it back when loaded.
function M.register_class(name, metatable)
  if type(name) ~= "string" or name == "" then
    error("savechain.register_class expects a class name", 2)
  end
  if type(metatable) ~= "table" then
    error("savechain.register_class expects a metatable", 2)
  end
  local known = core.classes[name]
  if known ~= nil and known ~= metatable then
    error("class " .. name .. " is already registered with another metatable", 2)
  end
  local other = core.class_names[metatable]
  if other ~= nil and other ~= name then
    error("this metatable is already registered as class " .. other, 2)
  end
  core.classes[name] = metatable
  core.class_names[metatable] = name
  return metatable
end

-- The save text of a value (canonical, pretty unless opts.compact).
-- An error is its message alone: where in the text, or in the value, and what is wrong.
function M.encode(value, opts)
  local text, err = core.encode(value, opts ~= nil and opts.compact == true)
  if text == nil then error(err, 0) end
  return text
end

-- The value that save text spells (nil for a text that is `null`). An error is its message
-- alone, with the line and column in the text.
function M.decode(text)
  if type(text) ~= "string" then
    error("savechain.decode expects a string of save text", 2)
  end
  local ok, value = core.decode(text)
  if not ok then error(value, 0) end
  return value
end

-- Module state -------------------------------------------------------------------------

local modules = {}       -- name -> { save = function, load = function, version, upgrades }
local kept = {}          -- states of modules not registered in this run, written back as they were
local kept_versions = {} -- and their versions

-- The name, in what `collect` returns, of the versions of the modules that declare one. No
-- module may take it.
local VERSIONS = "savechain.versions"

-- Registers the module `name`: `handlers.save()` returns its state for the save and
-- `handlers.load(state)` takes it back (nil when the save has none). With
-- `handlers.version` (an integer from 1), the state is saved with that version, and a
-- state saved by an older version of the module is upgraded before `load` gets it:
-- `handlers.upgrades[N](state)` takes it from version N to N + 1 (returning the new state,
-- or nothing when it changed the state in place). A state saved before the module had a
-- version is version 1.
function M.register(name, handlers)
  if type(name) ~= "string" then
    error("savechain.register expects a module name", 2)
  end
  if name == VERSIONS then
    error("savechain.register: the name " .. VERSIONS .. " is the library's own", 2)
  end
  if type(handlers) ~= "table" or type(handlers.save) ~= "function" or type(handlers.load) ~= "function" then
    error("savechain.register expects { save = function, load = function }", 2)
  end
  local version, upgrades = handlers.version, handlers.upgrades
  if version == nil and upgrades ~= nil then
    error("savechain.register: upgrades need the module's version (version = N)", 2)
  end
  if version ~= nil then
    if math.type(version) ~= "integer" or version < 1 then
      error("savechain.register: version is an integer from 1, not " .. tostring(version), 2)
    end
    if upgrades ~= nil and type(upgrades) ~= "table" then
      error("savechain.register: upgrades is a table of functions by version", 2)
    end
    for from, upgrade in pairs(upgrades or {}) do
      if math.type(from) ~= "integer" or from < 1 or from >= version or type(upgrade) ~= "function" then
        error("savechain.register: upgrades[N] is the function from version N to N + 1, for N from 1 to "
          .. (version - 1) .. "; found upgrades[" .. tostring(from) .. "]", 2)
      end
    end
  end
  modules[name] = handlers
  return handlers
end

-- The state of every module, by name, to be saved, with the versions of those that declare
-- one under "savechain.versions".
function M.collect()
  local states, versions = {}, {}
  for name, state in pairs(kept) do
    states[name], versions[name] = state, kept_versions[name]
  end
  for name, handlers in pairs(modules) do
    states[name], versions[name] = handlers.save(), handlers.version
  end
  if next(versions) ~= nil then
    states[VERSIONS] = versions
  end
  return states
end

-- `state` of the module `name`, saved at version `at`, brought to the module's version.
local function upgraded(name, handlers, state, at)
  if math.type(at) ~= "integer" or at < 1 then
    error("savechain.restore: the version of " .. name .. "'s state is " .. tostring(at) .. ", not an integer from 1", 3)
  end
  if at > handlers.version then
    error(("savechain.restore: the state of %s is version %d, newer than the module (version %d): "
      .. "it was saved by a newer build; nothing was loaded"):format(name, at, handlers.version), 3)
  end
  while at < handlers.version do
    local upgrade = handlers.upgrades and handlers.upgrades[at]
    if upgrade == nil then
      error(("savechain.restore: the state of %s is version %d, and the module has no upgrade from %d "
        .. "to %d; nothing was loaded"):format(name, at, at, at + 1), 3)
    end
    local ok, result = pcall(upgrade, state)
    if not ok then
      error(("savechain.restore: upgrading the state of %s from version %d to %d failed: %s; nothing "
        .. "was loaded"):format(name, at, at + 1, tostring(result)), 3)
    end
    if result ~= nil then state = result end
    at = at + 1
  end
  return state
end

-- Hands each registered module its state from a save, upgraded first when the module
-- declares a newer version than the state's; when one cannot be (a state from a newer
-- build, a failing upgrade), it is an error and no module is loaded. States of modules
-- that are not registered are kept, with their versions, and saved again, so a save never
-- loses them.
function M.restore(states)
  states = states or {}
  local versions = states[VERSIONS] or {}
  if type(versions) ~= "table" then
    error("savechain.restore: " .. VERSIONS .. " is not a table of versions", 2)
  end
  local ready = {}
  for name, handlers in pairs(modules) do
    local state = states[name]
    if state ~= nil and handlers.version ~= nil then
      state = upgraded(name, handlers, state, versions[name] or 1)
    end
    ready[name] = state
  end
  kept, kept_versions = {}, {}
  for name, state in pairs(states) do
    if name ~= VERSIONS and modules[name] == nil then
      kept[name], kept_versions[name] = state, versions[name]
    end
  end
  for name, handlers in pairs(modules) do
    handlers.load(ready[name])
  end
end

-- Equality as a save sees it -------------------------------------------------------------

local function float_bits(x)
  return string.pack("<d", x)
end

-- Whether `a` and `b` would give the same save: same types (integer 3 is not float 3.0),
-- floats equal bit for bit (so NaN equals the same NaN and -0.0 differs from 0.0), tables
-- equal entry by entry with the same metatables and the same sharing: where `a` reaches
-- one table twice, `b` reaches one table twice at the same places. The array mark only
-- matters on empty tables.
function M.equal(a, b)
  local a_to_b, b_to_a = {}, {}
  local same

  local function same_meta(x, y)
    local mx, my = getmetatable(x), getmetatable(y)
    if mx == my then return true end
    if next(x) == nil then return false end
    return (mx == nil or mx == core.array_mt) and (my == nil or my == core.array_mt)
  end

  function same(x, y)
    if math.type(x) ~= math.type(y) or type(x) ~= type(y) then
      return false
    end
    if math.type(x) == "float" then
      return float_bits(x) == float_bits(y)
    end
    if type(x) ~= "table" then
      return x == y
    end
    if (getmetatable(x) == U64 and getmetatable(y) == U64)
      or (getmetatable(x) == BYTES and getmetatable(y) == BYTES) then
      return x[1] == y[1]
    end
    if a_to_b[x] ~= nil or b_to_a[y] ~= nil then
      return a_to_b[x] == y and b_to_a[y] == x
    end
    a_to_b[x], b_to_a[y] = y, x
    if not same_meta(x, y) then
      return false
    end
    for k, v in pairs(x) do
      local w
      if type(k) == "table" then
        -- A table key matches the key of `y` it has been paired with.
        local mapped = a_to_b[k]
        if mapped == nil then
          for k2 in pairs(y) do
            if type(k2) == "table" and b_to_a[k2] == nil then
              -- Try the pairing; undo what it recorded if it fails.
              local saved_a, saved_b = {}, {}
              for t, u in pairs(a_to_b) do saved_a[t] = u end
              for t, u in pairs(b_to_a) do saved_b[t] = u end
              if same(k, k2) and same(v, y[k2]) then
                mapped = k2
                break
              end
              a_to_b, b_to_a = saved_a, saved_b
            end
          end
        end
        if mapped == nil then return false end
        w = y[mapped]
      else
        w = rawget(y, k)
      end
      if w == nil or not same(v, w) then
        return false
      end
    end
    for k in pairs(y) do
      if type(k) ~= "table" and rawget(x, k) == nil then
        return false
      end
    end
    return true
  end

  return same(a, b)
end

return M
