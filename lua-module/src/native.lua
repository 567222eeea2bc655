-- The functions the native module adds to the savechain library: each checks its
-- arguments, calls the Rust side (which answers its result, or nil and a message) and
-- raises errors as plain messages, as the library's encode and decode do.
local savechain, native = ...

local type, error, setmetatable, getmetatable = type, error, setmetatable, getmetatable
local pairs, next, math_type = pairs, next, math.type

-- Compressed saves -------------------------------------------------------------------
-- Save text may come compressed (zstd or gzip, known by its first bytes: a file's bytes
-- as read), and may be written so with compress = "zstd" | "gzip" | "none" and level = N.

-- `opts` without `compress` and `level`, and those two: nil, nil when neither is given
-- (then `opts` itself, untouched, is what the library gets).
local function split_compression(who, opts)
  if type(opts) ~= "table" or (opts.compress == nil and opts.level == nil) then
    return opts, nil, nil
  end
  local codec, level = opts.compress, opts.level
  if type(codec) ~= "string" then
    error(who .. ": compress is \"zstd\", \"gzip\" or \"none\"", 3)
  end
  if level ~= nil and math_type(level) ~= "integer" then
    error(who .. ": level is an integer", 3)
  end
  local rest = {}
  for key, value in pairs(opts) do
    if key ~= "compress" and key ~= "level" then rest[key] = value end
  end
  return rest, codec, level
end

local function compressed(text, codec, level)
  local out, err = native.compress(text, codec, level)
  if out == nil then error(err, 0) end
  return out
end

-- The text save bytes hold: decompressed when they are zstd or gzip.
local function plain(text)
  local out, err = native.decompress(text)
  if out == nil then error(err, 0) end
  return out
end

local decode, encode, save = savechain.decode, savechain.encode, savechain.save

-- The value that save text spells, the text plain or compressed.
function savechain.decode(text)
  if type(text) ~= "string" then
    error("savechain.decode expects a string of save text", 2)
  end
  return decode(plain(text))
end

-- The save text of a value; with compress = "zstd" or "gzip" (and level = N), stored so.
function savechain.encode(value, opts)
  local rest, codec, level = split_compression("savechain.encode", opts)
  if codec == nil then return encode(value, opts) end
  -- The library checks the other options, and names no compression in its messages.
  return compressed(encode(value, next(rest) ~= nil and rest or nil), codec, level)
end

-- The text of a save of every registered module (savechain.save); with compress = "zstd"
-- or "gzip" (and level = N), stored so.
function savechain.save(opts)
  local rest, codec, level = split_compression("savechain.save", opts)
  if codec == nil then return save(opts) end
  return compressed(save(rest), codec, level)
end

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
-- nothing needed to change. `text` may be compressed; what comes back is stored as it was
-- unless compress says otherwise. Options: {to = N, keep_going = true, strict = true,
-- compress = "zstd" | "gzip" | "none", level = N}.
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
