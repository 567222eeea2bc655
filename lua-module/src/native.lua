-- The functions the native module adds to the savechain library: each checks its
-- arguments, calls the Rust side (which answers its result, or nil and a message) and
-- raises errors as plain messages, as the library's encode and decode do.
local savechain, native = ...

local type, error, setmetatable, getmetatable = type, error, setmetatable, getmetatable

-- Save text written again in `style`.
local function reformat(text, style)
  local out, err = native.reformat(text, style)
  if out == nil then error(err, 0) end
  return out
end

-- The canonical text of save text: pretty, or one line with {compact = true}.
function savechain.format(text, opts)
  if type(text) ~= "string" then
    error("savechain.format expects a string of save text", 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("savechain.format takes save text and a table of options such as {compact = true}", 2)
  end
  local out = reformat(text, (opts ~= nil and opts.compact == true) and "compact" or "pretty")
  return out
end

-- The decimal view of save text: doubles as the shortest decimals that read back to the
-- same bits (docs/FORMAT.md, section 5.1).
function savechain.decimal(text)
  if type(text) ~= "string" then
    error("savechain.decimal expects a string of save text", 2)
  end
  local out = reformat(text, "decimal")
  return out
end

local Chain = {}
Chain.__index = Chain
Chain.__name = "savechain chain"

-- What a chain object runs, kept out of its scripts' reach.
local handles = setmetatable({}, { __mode = "k" })

-- The upgrade chain of a folder of Lua steps, as save-upgrade --upgrades DIR --writer
-- VERSION [--mods DIR] takes it: {steps = DIR, writer = VERSION, game = NAME, mods = DIR,
-- limits = {instructions = N, memory = BYTES, time = SECONDS}}.
function savechain.chain(opts)
  local handle, about = native.chain(opts)
  if handle == nil then error(about, 0) end
  local chain = setmetatable(about, Chain)
  handles[chain] = handle
  return chain
end

-- The save of `text` upgraded by the chain, and a report of what ran: `text` itself when
-- nothing needed to change. Options: {to = N, keep_going = true, strict = true}.
function Chain:upgrade(text, opts)
  local handle = handles[self]
  if handle == nil then
    error("chain:upgrade is called on a chain, with a colon: chain:upgrade(text)", 2)
  end
  if type(text) ~= "string" then
    error("chain:upgrade expects a string of save text", 2)
  end
  local out, report = native.upgrade(handle, text, opts)
  if out == nil then error(report, 0) end
  return out, report
end
