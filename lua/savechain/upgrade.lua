-- Helpers for upgrade steps, each change in a line:
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
-- A path is a string of keys joined by dots ("ship.cargo") or a list of keys
-- ({"systems", 3, "name"}) when a key is not a plain string. Each helper returns true
-- when it changed something and false when the path was not there.

local _, require = ...
local savechain = require("savechain")

local M = {}

local function keys_of(path)
  if type(path) == "table" then
    return path
  end
  if type(path) ~= "string" or path == "" then
    error("a path is a string of keys joined by dots or a list of keys", 3)
  end
  local keys = {}
  for key in (path .. "."):gmatch("([^.]*)%.") do
    keys[#keys + 1] = key
  end
  return keys
end

local function show(path)
  if type(path) == "table" then
    local parts = {}
    for i, key in ipairs(path) do
      parts[i] = tostring(key)
    end
    return table.concat(parts, ".")
  end
  return path
end

-- The table holding the last key of `path`, and that key; nil when a table on the way is
-- missing (or, with `create`, made).
local function parent(root, path, create)
  local keys = keys_of(path)
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

-- The value at `path`, or nil.
function M.get(root, path)
  local t, key = parent(root, path, false)
  if t == nil then return nil end
  return t[key]
end

-- Sets the value at `path`, making the tables on the way.
function M.set(root, path, value)
  local t, key = parent(root, path, true)
  if t == nil then
    error("cannot set " .. show(path) .. ": a value on the way is not a table", 2)
  end
  t[key] = value
  return true
end

-- Removes the value at `path` on purpose: strict upgrades accept only removals declared
-- this way (rename, move and drop declare theirs).
local dropped = {}

local function declare(path)
  dropped[#dropped + 1] = show(path)
end

-- Renames the key at `path` to `new_key`, in the same table.
function M.rename(root, path, new_key)
  local t, key = parent(root, path, false)
  if t == nil or t[key] == nil then return false end
  if t[new_key] ~= nil then
    error("cannot rename " .. show(path) .. " to " .. tostring(new_key) .. ": that key is taken", 2)
  end
  t[new_key], t[key] = t[key], nil
  declare(path)
  return true
end

-- Moves the value at `from` to `to`, making the tables on the way.
function M.move(root, from, to)
  local t, key = parent(root, from, false)
  if t == nil or t[key] == nil then return false end
  if M.get(root, to) ~= nil then
    error("cannot move " .. show(from) .. " to " .. show(to) .. ": something is there", 2)
  end
  local value = t[key]
  t[key] = nil
  M.set(root, to, value)
  declare(from)
  return true
end

-- Sets `path` to `value` where it is missing.
function M.default(root, path, value)
  if M.get(root, path) ~= nil then return false end
  M.set(root, path, value)
  return true
end

-- Calls fn(element, index) on each element of the array at `path`; where fn returns a
-- value, that value replaces the element (otherwise fn changed it in place).
function M.map(root, path, fn)
  local array = M.get(root, path)
  if type(array) ~= "table" then return false end
  for i = 1, #array do
    local replaced = fn(array[i], i)
    if replaced ~= nil then
      array[i] = replaced
    end
  end
  return true
end

-- Turns the array at `path` into a table of its elements keyed by their `field`
-- ([{id = "sol"}] becomes {sol = {id = "sol"}}). Every element must have the field, and
-- no two the same value.
function M.index_by(root, path, field)
  local t, key = parent(root, path, false)
  local array = t and t[key]
  if type(array) ~= "table" then return false end
  local map = {}
  for i = 1, #array do
    local element = array[i]
    local id = type(element) == "table" and element[field] or nil
    if id == nil or id == savechain.null then
      error(show(path) .. "[" .. i .. "] has no " .. tostring(field), 2)
    end
    if map[id] ~= nil then
      error(show(path) .. "[" .. i .. "]: " .. tostring(field) .. " " .. tostring(id) .. " appears twice", 2)
    end
    map[id] = element
  end
  t[key] = map
  return true
end

function M.drop(root, path)
  local t, key = parent(root, path, false)
  declare(path)
  if t == nil or t[key] == nil then return false end
  t[key] = nil
  return true
end

-- The paths dropped since the last call, which starts a new list.
function M.take_dropped()
  local list = dropped
  dropped = {}
  return list
end

return M
