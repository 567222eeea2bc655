-- Helpers for upgrade steps, each change in a line (docs/STEPS.md says more of each):
--
--   local up = require("savechain.upgrade")
--   return function(data)
--     up.rename(data, "player.hp", "health")
--     up.move(data, "player.credits", "player.wallet.credits")
--     up.default(data, "ship.shield", 100)
--     up.map(data, "ship.cargo", function(item) item.mass = item.mass * 1000 end)
--     up.index_by(data, "systems", "id")
--     up.drop(data, "player.legacy_flag")
--   end
--
-- A path is written as errors and diffs write them: keys joined by dots ("ship.cargo"),
-- an array's element by its place counting from 0 as in the save ("ship.cargo[0]", the
-- first), and a key that is not a plain name quoted (["a.b"]). Or it is a list of Lua keys
-- ({"systems", 1, "name"}: the first system's name). Each helper returns true when it
-- changed something and false when the path was not there. Errors, and the paths helpers
-- declare dropped, show a path in the step's data from the document's root, as `get`,
-- `set` and diffs print it ("data.ship.cargo[0]").

-- The library's loader when the Rust library loads this module; Lua's own require when a
-- stock interpreter finds the file on LUA_PATH.
local _, loader = ...
local require = type(loader) == "function" and loader or require
local savechain = require("savechain")

local M = {}

local type, error, tostring, tonumber = type, error, tostring, tonumber
-- Lua 5.1, 5.2 and LuaJIT (the pure-Lua rock) have no math.tointeger: every number is a
-- double there, an integer when it is integral.
local tointeger = math.tointeger or function(x)
  if type(x) == "number" and x == math.floor(x) and x - 1 ~= x then return x end
end
local byte, sub, concat = string.byte, string.sub, table.concat

local PATH_ERROR = "a path is a string such as \"ship.cargo[0].mass\" or a list of keys"

-- Bytes a path is made of. The sandbox's pattern functions are budgeted and cost more
-- than reading a path byte by byte.
local DOT, OPEN, CLOSE, QUOTE, BACKSLASH, ZERO, NINE = 46, 91, 93, 34, 92, 48, 57

-- The keys of a string path, or nil and why it is malformed.
local function parse(path)
  local keys, at, n = {}, 1, #path
  -- All the bytes at once: a call per byte would cost more than the rest.
  local b = { byte(path, 1, n) }
  while at <= n do
    local c = b[at]
    if c == OPEN then
      local digits = at + 1
      while digits <= n and b[digits] >= ZERO and b[digits] <= NINE do
        digits = digits + 1
      end
      if digits > at + 1 and b[digits] == CLOSE then
        keys[#keys + 1] = tointeger(tonumber(sub(path, at + 1, digits - 1))) + 1
        at = digits + 1
      elseif b[at + 1] == QUOTE then
        -- A quoted key, with \" and \\ inside.
        local key, i = {}, at + 2
        while true do
          local ch = b[i]
          if ch == nil then return nil, "a quoted key is not closed" end
          if ch == QUOTE then break end
          if ch == BACKSLASH then
            i = i + 1
            if b[i] == nil then return nil, "a quoted key is not closed" end
          end
          key[#key + 1] = sub(path, i, i)
          i = i + 1
        end
        if b[i + 1] ~= CLOSE then return nil, "expected ] after a quoted key" end
        keys[#keys + 1] = concat(key)
        at = i + 2
      else
        return nil, "expected a number or a quoted key after ["
      end
    else
      if c == DOT then
        if at == 1 or at == n then return nil, "a path does not start or end with a dot" end
        at = at + 1
      elseif at ~= 1 then
        return nil, "expected . or [ after " .. sub(path, 1, at - 1)
      end
      local stop = n + 1
      for i = at, n do
        local d = b[i]
        if d == DOT or d == OPEN then
          stop = i
          break
        end
      end
      if stop == at then return nil, "an empty key (two dots, or a dot before [)" end
      keys[#keys + 1] = sub(path, at, stop - 1)
      at = stop
    end
  end
  if #keys == 0 then return nil, "the path is empty" end
  return keys
end

-- Paths read so far (steps give the same few again and again, for each element of an
-- array), up to a bound, since a step may also make its paths as it goes.
local parsed, parsed_count = {}, 0

-- The keys read from paths (which, unlike a list a step gives, never change), each with
-- its text as `show` writes it once written (false until then): steps show the same few
-- again and again, as each declares what it drops.
local texts = setmetatable({}, { __mode = "k" })

-- The keys of `path` (not to be changed); an error at the step's line (`level` of the
-- helper's caller).
local function keys_of(path, level)
  if type(path) == "table" and #path > 0 then return path end
  if type(path) ~= "string" then error(PATH_ERROR, level + 1) end
  local keys = parsed[path]
  if keys then return keys end
  local why
  keys, why = parse(path)
  if keys == nil then error("malformed path " .. path .. ": " .. why .. "; " .. PATH_ERROR, level + 1) end
  if parsed_count < 1024 then
    parsed[path], parsed_count = keys, parsed_count + 1
    texts[keys] = false
  end
  return keys
end

-- Whether `key` is written bare in a path: a letter or _, then letters, digits and _.
local function is_name(key)
  local b = { byte(key, 1, -1) }
  for i = 1, #b do
    local c = b[i]
    if not ((c >= 97 and c <= 122) or (c >= 65 and c <= 90) or c == 95
        or (i > 1 and c >= ZERO and c <= NINE)) then
      return false
    end
  end
  return #b > 0
end

-- A key as paths write it: a name, [N] for an array's element, or a quoted key.
local function key_text(key, first)
  if tointeger(key) and key >= 1 then return "[" .. tostring(key - 1) .. "]" end
  key = tostring(key)
  if is_name(key) then return first and key or "." .. key end
  local quoted = {}
  for i = 1, #key do
    local c = sub(key, i, i)
    if c == '"' or c == "\\" then quoted[#quoted + 1] = "\\" end
    quoted[#quoted + 1] = c
  end
  return '["' .. concat(quoted) .. '"]'
end

-- Where helpers know a table to be inside the data (the elements `map` hands out: the
-- call's root, path and array), so that what they declare from it is the path from the
-- data, as strict mode compares it. Worked out only when a path is shown.
local where = setmetatable({}, { __mode = "k" })

-- The data the running step was given (take_dropped's argument): paths from it are shown
-- from the document's root, "data.…". Weak, so a step's data is not kept past it.
local step_data = setmetatable({}, { __mode = "v" })

local show

-- The path of `t` from the document's root when it is the step's data, or `map` handed it
-- out; "" otherwise.
local function base_of(t)
  local call = where[t]
  if call == nil then return "" end
  if call.index == nil then
    call.index = {}
    for i = 1, #call.array do
      if type(call.array[i]) == "table" then call.index[call.array[i]] = i end
    end
  end
  local i = call.index[t]
  if i == nil then return "" end
  return show(call.root, call.keys) .. key_text(i, false)
end

-- The text of `keys`, a path from whatever table they are followed from.
local function relative(keys)
  if texts[keys] then return texts[keys] end
  local parts = {}
  for i = 1, #keys do
    parts[i] = key_text(keys[i], i == 1)
  end
  local text = concat(parts)
  if texts[keys] == false then texts[keys] = text end
  return text
end

-- The path `keys` from `root`: from the document's root where `root` is known (the step's
-- data, or inside it), as written from `root` otherwise.
function show(root, keys)
  local base = root == step_data[1] and "data" or base_of(root)
  local text = relative(keys)
  if base == "" then return text end
  if byte(text, 1) == OPEN then return base .. text end
  return base .. "." .. text
end

-- The table holding the last key, and that key; nil when a table on the way is missing
-- (or, with `create`, made).
local function parent(root, keys, create)
  local t = root
  for i = 1, #keys - 1 do
    local next_t = t[keys[i]]
    if next_t == nil and create then
      next_t = {}
      t[keys[i]] = next_t
    end
    if type(next_t) ~= "table" then
      return nil, keys[#keys]
    end
    t = next_t
  end
  return t, keys[#keys]
end

local function get(root, keys)
  local t, key = parent(root, keys, false)
  if t == nil then return nil end
  return t[key]
end

local function set(root, keys, value, level)
  local t, key = parent(root, keys, true)
  if t == nil then
    error("cannot set " .. show(root, keys) .. ": a value on the way is not a table", level + 1)
  end
  t[key] = value
  return true
end

-- Removals declared on purpose: strict upgrades accept only removals declared this way
-- (rename, move and drop declare theirs).
local dropped = {}

local function declare(root, keys)
  dropped[#dropped + 1] = show(root, keys)
end

-- The value at `path`, or nil.
function M.get(root, path)
  return get(root, keys_of(path, 2))
end

-- Sets the value at `path`, making the tables on the way.
function M.set(root, path, value)
  return set(root, keys_of(path, 2), value, 2)
end

-- Renames the key at `path` to `new_key`, in the same table: a key, not a path (up.move
-- takes a value elsewhere).
function M.rename(root, path, new_key)
  local keys = keys_of(path, 2)
  local new_keys = type(new_key) == "string" and parse(new_key)
  if type(new_key) == "string" and (new_keys == nil or #new_keys > 1) then
    error("up.rename takes the new key, not a path: " .. tostring(new_key) ..
      " has a dot or a bracket; to take the value elsewhere, use up.move(root, \"" ..
      relative(keys) .. "\", \"" .. new_key .. "\")", 2)
  end
  local t, key = parent(root, keys, false)
  if t == nil or t[key] == nil then return false end
  if t[new_key] ~= nil then
    error("cannot rename " .. show(root, keys) .. " to " .. tostring(new_key) .. ": that key is taken", 2)
  end
  t[new_key], t[key] = t[key], nil
  declare(root, keys)
  return true
end

-- Moves the value at `from` to `to`, making the tables on the way.
function M.move(root, from, to)
  local from_keys, to_keys = keys_of(from, 2), keys_of(to, 2)
  local t, key = parent(root, from_keys, false)
  if t == nil or t[key] == nil then return false end
  if get(root, to_keys) ~= nil then
    error("cannot move " .. show(root, from_keys) .. " to " .. show(root, to_keys) .. ": something is there", 2)
  end
  local value = t[key]
  t[key] = nil
  set(root, to_keys, value, 2)
  declare(root, from_keys)
  return true
end

-- Sets `path` to `value` where it is missing.
function M.default(root, path, value)
  local keys = keys_of(path, 2)
  if get(root, keys) ~= nil then return false end
  set(root, keys, value, 2)
  return true
end

-- Calls fn(element, index) on each element of the array at `path`; where fn returns a
-- value, that value replaces the element (otherwise fn changed it in place). Helpers given
-- an element declare what they remove from the data's root.
function M.map(root, path, fn)
  local keys = keys_of(path, 2)
  local array = get(root, keys)
  if type(array) ~= "table" then return false end
  local call = { root = root, keys = keys, array = array }
  for i = 1, #array do
    local element = array[i]
    if type(element) == "table" then
      where[element] = call
    end
    local replaced = fn(element, i)
    if replaced ~= nil then
      array[i] = replaced
    end
  end
  return true
end

-- Turns the array at `path` into a table of its elements keyed by their `field`
-- ([{id = "sol"}] becomes {sol = {id = "sol"}}). Every element must have the field, and
-- no two the same value. A table that is no array (indexed already) is left as it is.
function M.index_by(root, path, field)
  local keys = keys_of(path, 2)
  local t, key = parent(root, keys, false)
  local array = t and t[key]
  if type(array) ~= "table" then return false end
  if #array == 0 and next(array) ~= nil then return false end
  local map = {}
  for i = 1, #array do
    local element = array[i]
    local id = type(element) == "table" and element[field] or nil
    if id == nil or id == savechain.null then
      error(show(root, keys) .. key_text(i, false) .. " has no " .. tostring(field), 2)
    end
    if map[id] ~= nil then
      error(show(root, keys) .. key_text(i, false) .. ": " .. tostring(field) .. " " .. tostring(id) .. " appears twice", 2)
    end
    map[id] = element
  end
  t[key] = map
  return true
end

-- Removes the value at `path` on purpose, declaring it removed even when it is not there.
function M.drop(root, path)
  local keys = keys_of(path, 2)
  local t, key = parent(root, keys, false)
  declare(root, keys)
  if t == nil or t[key] == nil then return false end
  t[key] = nil
  return true
end

-- The paths dropped since the last call, which starts a new list: for a step given `data`
-- when given it (paths from `data` then shown as "data.…"), for none otherwise.
function M.take_dropped(data)
  local list = dropped
  dropped = {}
  step_data[1] = data
  return list
end

return M
