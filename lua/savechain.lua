-- savechain: Lua values in saves, and the saved state of a game's script modules.
--
--   local savechain = require("savechain")
--   savechain.register("economy", {
--     save = function() return economy.state end,
--     load = function(state) economy.state = state or economy.new_state() end,
--   })
--   local text = savechain.save({ version = 1, writer = "1.0.0", game = "My Game" })
--   savechain.load(text, { version = 1, game = "My Game" })   -- every module's load
--
-- docs/FORMAT.md (section 8) says what each Lua value becomes in a save, and how a save's
-- meta.version (upgraded by the game's steps) and each module's version (upgraded by the
-- module, at load) relate.
--
-- This one file is the whole library in any Lua host. The Rust library and the native
-- module (lua-module/) load it with their Rust core, which reads and writes save text.
-- Copied into a game that loads no native code, it reads and writes saves itself, in
-- Lua 5.1, 5.2, 5.3, 5.4 or LuaJIT (see "pure-Lua codec" below for what differs before 5.3).

-- Loaded by the Rust library (embedded, or the native module), the chunk gets a loader of the
-- library's modules and uses its Rust core; loaded as a plain Lua file (copied into a game,
-- found on LUA_PATH), it gets a file name and reads and writes saves in Lua itself.
local _, loader = ...
local core
if type(loader) == "function" then
  core = loader("savechain.core")
else
  -- savechain: pure-Lua codec begins
  -- The format read and written in plain Lua, for hosts that load no native code: Lua 5.1,
  -- 5.2, 5.3, 5.4 and LuaJIT. On Lua 5.3 and later the text is byte for byte what the Rust
  -- library writes. On 5.1, 5.2 and LuaJIT, where every number is a double, an integral
  -- number from -2^53 to 2^53 (but -0.0) is written as an integer, and an integer beyond
  -- that range is refused rather than rounded; the sign and payload of a NaN are not kept.
  core = (function()
    local type, next, pairs, setmetatable, rawget, rawset, rawequal, tostring, tonumber, error, pcall =
      type, next, pairs, setmetatable, rawget, rawset, rawequal, tostring, tonumber, error, pcall
    -- A class's metatable may hide itself (__metatable): debug.getmetatable sees it where
    -- the host has the debug library. (And tests of null are raw: a class's __eq must not
    -- make one of its instances equal to null.)
    local getmetatable = debug and debug.getmetatable or getmetatable
    local byte, char, sub, find, match, format, gsub, rep, lower =
      string.byte, string.char, string.sub, string.find, string.match, string.format, string.gsub,
      string.rep, string.lower
    local concat, sort = table.concat, table.sort
    -- The codec walks a table's keys calling `next` by another name, on purpose: LuaJIT
    -- specializes a loop whose iterator is spelt `next` or `pairs` (ISNEXT/ITERN), and
    -- Debian's LuaJIT (2.1.0-beta3, a snapshot of 2022-03-20) compiles that loop without a
    -- check it needs: once hot, a walk could stop early, and tables were written with keys
    -- missing, or as {} (LuaJIT issue #827, fixed upstream in April 2022; a later LuaJIT
    -- drops keys there in another case until 2026, #1510). The plain loop has neither bug.
    local next_key = next
    local floor, huge = math.floor, math.huge
    local mtype, pack, unpack = math.type, string.pack, string.unpack
    local frexp = math.frexp
    -- Lua 5.3 and later tell integers from floats; before, every number is a double.
    local INTEGERS = mtype ~= nil
    local MAX_DEPTH = 512
    -- The deepest nesting the text being read may have: MAX_DEPTH, or less as the caller
    -- set it with savechain.decode_max_depth (Reader.read sets it for each text).
    local read_depth = MAX_DEPTH
    -- Made at run time: Lua 5.1 merges the constants 0 and -0.0 of a function into one.
    local NEGATIVE_ZERO = -1 / huge
    local EXACT = 2 ^ 53

    local c = {
      null = setmetatable({}, {
        __tostring = function() return "savechain.null" end,
        __newindex = function() error("savechain.null cannot hold anything", 2) end,
      }),
      array_mt = {},
      u64_mt = {},
      bytes_mt = {},
      classes = {},
      class_names = {},
    }
    local null, ARRAY, U64, BYTES, class_names = c.null, c.array_mt, c.u64_mt, c.bytes_mt, c.class_names

    -- Which numbers are integers in a save.
    local is_integer
    if INTEGERS then
      is_integer = function(x) return mtype(x) == "integer" end
    else
      is_integer = function(x)
        return x == floor(x) and x >= -EXACT and x <= EXACT and (x ~= 0 or 1 / x > 0)
      end
    end

    -- A pattern class with the byte 0: Lua 5.1 patterns cannot hold it, and spell it %z.
    local NUL = pcall(find, "\0", "[\0]") and "\0" or "%z"
    local CONTROL = "[" .. NUL .. "\1-\31\"\\]"

    -- Where the first byte that is not part of valid UTF-8 is in `s`, or nil.
    local function invalid_at(s)
      local i, n = find(s, "[\128-\255]"), #s
      while i do
        local b = byte(s, i)
        local len, lo, hi = 0, 128, 191
        if b >= 194 and b <= 223 then len = 1
        elseif b == 224 then len, lo = 2, 160
        elseif b == 237 then len, hi = 2, 159
        elseif b >= 225 and b <= 239 then len = 2
        elseif b == 240 then len, lo = 3, 144
        elseif b == 244 then len, hi = 3, 143
        elseif b >= 241 and b <= 243 then len = 3
        else return i end
        if i + len > n then return i end
        local b1 = byte(s, i + 1)
        if b1 < lo or b1 > hi then return i end
        for j = i + 2, i + len do
          local bj = byte(s, j)
          if bj < 128 or bj > 191 then return i end
        end
        i = find(s, "[\128-\255]", i + len + 1)
      end
      return nil
    end

    -- UTF-8 text or not. Lua 5.4's utf8.len is strict; 5.3's lets surrogates (and, before
    -- 5.3.6, code points past U+10FFFF) through; before 5.3, the walk above.
    local is_utf8
    local utf8_len = utf8 and utf8.len
    if utf8_len and _VERSION == "Lua 5.4" then
      is_utf8 = function(s)
        return not find(s, "[\128-\255]") or utf8_len(s) ~= nil
      end
    elseif utf8_len then
      is_utf8 = function(s)
        return not find(s, "[\128-\255]") or (utf8_len(s) ~= nil and not find(s, "\237[\160-\191]")
          and not find(s, "\244[\144-\191]") and not find(s, "[\245-\255]"))
      end
    else
      is_utf8 = function(s)
        return invalid_at(s) == nil
      end
    end

    -- Lua compares strings with the C library's strcoll, bytewise only in the C locale.
    -- (Checked at each encoding: a game may set the locale after loading this file.)
    local function less(a, b) return a < b end
    local function less_by_bytes(a, b)
      local n = #a < #b and #a or #b
      for i = 1, n do
        local x, y = byte(a, i), byte(b, i)
        if x ~= y then return x < y end
      end
      return #a < #b
    end
    local function bytewise_comparison()
      if "B" < "a" and "a" < "ab" and "a-c" < "ab" and "a" < "a\0" and "z" < char(128) then
        return less
      end
      return less_by_bytes
    end
    local bytewise = bytewise_comparison()

    -- Doubles --------------------------------------------------------------------------

    -- The sign, biased exponent and fraction (its high 20 and low 32 bits) of a double.
    local fields
    if pack then
      fields = function(x)
        local lo, hi = unpack("<I4I4", pack("<d", x))
        local negative = hi >= 2147483648
        if negative then hi = hi - 2147483648 end
        local e = floor(hi / 1048576)
        return negative, e, hi - e * 1048576, lo
      end
    elseif frexp then
      fields = function(x)
        local negative = x < 0 or (x == 0 and 1 / x < 0)
        if negative then x = -x end
        if x == 0 then return negative, 0, 0, 0 end
        if x ~= x then return negative, 2047, 524288, 0 end
        if x == huge then return negative, 2047, 0, 0 end
        local m, e = frexp(x)
        local biased, fraction = e + 1022, nil
        if biased <= 0 then
          biased, fraction = 0, x * 2 ^ 1022 * 2 ^ 52
        else
          fraction = (m * 2 - 1) * 2 ^ 52
        end
        local hi = floor(fraction / 4294967296)
        return negative, biased, hi, fraction - hi * 4294967296
      end
    else
      error("savechain needs string.pack (Lua 5.3 and later) or math.frexp (Lua 5.1, 5.2, LuaJIT)")
    end

    -- The spelling of a double, as docs/FORMAT.md (3.2) has it.
    local function hexfloat(x)
      local negative, e, hi, lo = fields(x)
      local sign = negative and "-" or ""
      if e == 2047 then
        if hi == 0 and lo == 0 then return sign .. "inf" end
        if hi == 524288 and lo == 0 then return sign .. "nan" end
        if hi == 0 then return format("%snan:0x%x", sign, lo) end
        return format("%snan:0x%x%08x", sign, hi, lo)
      end
      local digits = ""
      if hi ~= 0 or lo ~= 0 then
        digits = "." .. match(format("%05x%08x", hi, lo), "^(.-)0*$")
      end
      if e == 0 then
        if digits == "" then return sign .. "0x0p+0" end
        return sign .. "0x0" .. digits .. "p-1022"
      end
      e = e - 1023
      if e >= 0 then return sign .. "0x1" .. digits .. "p+" .. e end
      return sign .. "0x1" .. digits .. "p" .. e
    end

    -- The C library's %a spells finite normal doubles and zeros as the format does on most
    -- platforms, and much faster: used where it agrees with hexfloat on every probe.
    local NORMAL = 2.2250738585072014e-308
    local spell = hexfloat
    do
      local agrees = pcall(format, "%a", 1.5)
      for _, x in ipairs({ 1.5, -2.5, 0.1, 1 / 3, 0.0, -0.0, NORMAL, -NORMAL, 1.7976931348623157e308,
        -1.7976931348623157e308, 2 ^ 52 + 1, 1e300, 1e-300, 123456.75, huge, -huge }) do
        agrees = agrees and format("%a", x) == hexfloat(x)
      end
      if agrees then
        spell = function(x)
          if x ~= x or (x < NORMAL and x > -NORMAL and x ~= 0) then return hexfloat(x) end
          return format("%a", x)
        end
      end
    end

    local nan_of
    if pack then
      nan_of = function(negative, payload)
        local hi = floor(payload / 4294967296)
        return (unpack("<d", pack("<I4I4", payload - hi * 4294967296, 2146435072 + hi + (negative and 2147483648 or 0))))
      end
    end

    -- m * 2^k rounded once, for an integer m below 2^53.
    local function scaled(m, k)
      if m == 0 then return 0.0 end
      if k < -1200 then return 0.0 end
      if k < -1000 then return m * 2.0 ^ (k + 200) * 2.0 ^ -200 end
      if k > 1000 then return m * 2.0 ^ 1000 * 2.0 ^ (k - 1000) end
      return m * 2.0 ^ k
    end

    -- The double a `d` tag's string spells, or nil and why not.
    local function parse_hexfloat(s)
      local sign, int, dot, frac, exp = match(s, "^([-+]?)0[xX](%x*)(%.?)(%x*)[pP]([-+]?%d+)$")
      if not sign then
        sign, int, dot, frac = match(s, "^([-+]?)0[xX](%x*)(%.?)(%x*)$")
        exp = "0"
      end
      local negative = sign == "-"
      if not sign then
        local word = lower(s)
        sign, word = match(word, "^([-+]?)(.*)$")
        negative = sign == "-"
        if word == "inf" or word == "infinity" then return negative and -huge or huge end
        if word == "nan" then
          if nan_of then return nan_of(negative, 2251799813685248) end
          return 0 / 0
        end
        local payload = match(word, "^nan:0x(%x+)$")
        if payload then
          if not nan_of then
            return nil, "a NaN with a payload cannot be kept before Lua 5.3"
          end
          payload = match(payload, "^0*(.*)$")
          local p = #payload <= 13 and tonumber(payload, 16)
          if not p or p < 1 or p >= 4503599627370496 then
            return nil, "a NaN payload is between 1 and 2^52-1"
          end
          return nan_of(negative, p)
        end
        return nil, "expected a hexadecimal double such as 0x1.8p+1, inf or nan"
      end
      if int == "" and frac == "" then
        return nil, "expected hexadecimal digits after 0x"
      end
      local digits = match(int .. frac, "^0*(.*)$")
      local x
      if #digits < 14 or (#digits == 14 and byte(digits, 1) == 49) then
        x = scaled((tonumber(digits, 16) or 0) + 0.0, tonumber(exp) - 4 * #frac)
      else
        -- More digits than a double holds: the C library rounds them.
        x = tonumber(sign .. "0x" .. int .. dot .. frac .. "p" .. exp)
        if x == nil then return nil, "this Lua cannot read a hexadecimal double this long" end
        if x < 0 then x = -x end
      end
      if x == huge then return nil, "the number is too large for a double" end
      if negative then x = -x end
      return x
    end

    -- The double of a spelling as the writer spells them (0x1.8p+1, -0x0p+0, subnormals
    -- as 0x0.<digits>p-1022): Lua's tonumber, where it reads every probe exactly (it uses
    -- the C library's strtod), else parse_hexfloat.
    local read_spelling = parse_hexfloat
    do
      local agrees = true
      for _, x in ipairs({ 1.5, -2.5, 0.1, 1 / 3, -0.0, NORMAL, 2 ^ -1074, 2 ^ -1060 * 3,
        1.7976931348623157e308, 2 ^ 52 + 1, 1e300, 1e-300 }) do
        local back = tonumber(hexfloat(x))
        agrees = agrees and back == x and 1 / back == 1 / x
      end
      if agrees then
        read_spelling = function(s)
          local x = tonumber(s)
          if x == nil or x == huge or x == -huge then return parse_hexfloat(s) end
          return x
        end
      end
    end

    -- Writing -----------------------------------------------------------------------------

    local ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r",
      ["\8"] = "\\b", ["\12"] = "\\f" }
    for b = 0, 255 do
      local ch = char(b)
      if ESCAPES[ch] == nil and (b < 32 or b > 126) then ESCAPES[ch] = format("\\u%04x", b) end
    end
    local BYTE_SPECIAL = "[" .. NUL .. "\1-\31\"\\\127-\255]"

    local function quote(s)
      if find(s, CONTROL) then s = gsub(s, CONTROL, ESCAPES) end
      return '"' .. s .. '"'
    end

    local function quote_bytes(s)
      if find(s, BYTE_SPECIAL) then s = gsub(s, BYTE_SPECIAL, ESCAPES) end
      return '"' .. s .. '"'
    end

    local integer_text
    if INTEGERS then
      integer_text = function(x) return format("%d", x) end
    else
      integer_text = function(x) return format("%.0f", x) end
    end

    local indents = {}
    local function indent(level)
      local s = indents[level]
      if s == nil then
        s = "\n" .. rep("  ", level)
        indents[level] = s
      end
      return s
    end

    -- Shapes, as far as deciding tags needs (text/tags.rs).
    -- From S_NUMBER on, a second element that makes a two-element array a tag.
    local S_NULL, S_BOOL, S_INT, S_LETTER, S_STRING = 1, 2, 3, 4, 5
    local S_NUMBER, S_DOUBLE, S_BYTES, S_TABLE, S_ARRAY, S_OBJECT = 6, 7, 8, 9, 10, 11

    local function shape(v)
      local t = type(v)
      if t == "number" then return is_integer(v) and S_INT or S_DOUBLE end
      if t == "string" then
        if #v == 1 then
          local b = byte(v)
          if b >= 97 and b <= 122 then return S_LETTER end
        end
        return is_utf8(v) and S_STRING or S_BYTES
      end
      if t == "table" then
        if rawequal(v, null) then return S_NULL end
        local mt = getmetatable(v)
        if mt == U64 then return S_INT end
        if mt == BYTES then return S_BYTES end
        return S_TABLE
      end
      if t == "boolean" then return S_BOOL end
      return S_NULL
    end

    local function is_tag(letter, second)
      return letter == "d" or letter == "b" or second >= S_NUMBER
    end

    -- The rank of a keyed table's key (order.rs): booleans, numbers, strings, byte strings,
    -- tables.
    local function key_rank(k)
      local t = type(k)
      if t == "boolean" then return 1 end
      if t == "number" then return 2 end
      if t == "string" then return is_utf8(k) and 3 or 4 end
      if rawequal(k, null) then return 0 end
      local mt = getmetatable(k)
      if mt == U64 then return 2 end
      if mt == BYTES then return 4 end
      return 5
    end

    -- Tables met again in a walk that found no sharing first: the walk starts over.
    local MET_AGAIN = {}
    local as_double, is_sequence

    -- A Lua key as paths in messages show it: missions[3].on_complete. A path of more than
    -- 3 * PATH_ENDS steps shows its first and last PATH_ENDS and how many it leaves out
    -- between them: whole, a path 512 tables deep was thousands of characters.
    local PATH_ENDS = 8
    local function path_of(keys, depth)
      local path = {}
      local function step(i, first)
        local k = keys[i]
        if type(k) == "string" and match(k, "^[%a_][%w_]*$") then
          path[#path + 1] = (first and "" or ".") .. k
        elseif type(k) == "string" and is_utf8(k) then
          path[#path + 1] = "[" .. quote(k) .. "]"
        elseif type(k) == "table" then
          path[#path + 1] = "[<table>]"
        else
          path[#path + 1] = "[" .. tostring(k) .. "]"
        end
      end
      if depth <= 3 * PATH_ENDS then
        for i = 1, depth do step(i, i == 1) end
      else
        for i = 1, PATH_ENDS do step(i, i == 1) end
        path[#path + 1] = " ... " .. (depth - 2 * PATH_ENDS) .. " levels ... "
        for i = depth - PATH_ENDS + 1, depth do step(i, i == depth - PATH_ENDS + 1) end
      end
      return concat(path)
    end

    -- An encoder: a function of a value that writes its text, pretty or compact, with the
    -- tables of `shared` written once and referred to after (nil: none is shared). The
    -- layout rules are those of text/write.rs, rule for rule: `depth` counts the arrays
    -- and objects of text around a value, `escapes` the tags around it that add depth but
    -- no indentation, and `level` the Lua tables (for paths and the nesting limit).
    --
    -- With `outer_seen` (the tables the encoder of the whole value has met), it writes the
    -- text that orders a table among the keys of another: a table met before is shared
    -- after all (the walk starts over), and when sharing is known, a shared table stands
    -- as a reference, so that a table reached from its own keys ends.
    local function encoder(pretty, shared, outer_seen, texts)
      local out, n, escapes = {}, 0, 0
      local keys, ids, next_id = {}, {}, 1
      local seen = outer_seen and setmetatable({}, { __index = outer_seen }) or {}
      -- Each text key's written form, '"key": ', or false for a key that is not text:
      -- objects of one shape repeat their keys.
      local members = {}
      -- The canonical text of a document writes a top-level `meta` first (FIRST_MEMBER in
      -- text/write.rs); the text that orders a table key (with `outer_seen`) keeps every
      -- member in key order.
      local meta_first = outer_seen == nil
      local SEP = pretty and ", " or ","
      local COLON = pretty and '": ' or '":'
      local value, contents, key_text

      local function fail(message, level)
        local path = path_of(keys, level)
        error({ (path ~= "" and "at " .. path .. ": " or "") .. message }, 0)
      end

      local function check(depth, level)
        if depth > MAX_DEPTH then
          fail("nested more than " .. MAX_DEPTH .. " arrays and objects deep; it could not be read back", level)
        end
      end

      local function newline(depth)
        if pretty then
          n = n + 1
          out[n] = indent(depth - escapes)
        end
      end

      local function tag_open(letter)
        n = n + 1
        out[n] = '["' .. letter .. '"' .. SEP
      end

      -- [first, second] on the line it starts on, escaped as ["a", [...]] when it would
      -- read as a tag.
      local function pair(tag_like, depth, level, first, second, a, b)
        if tag_like then
          check(depth + 1, level)
          tag_open("a")
          escapes = escapes + 1
          depth = depth + 1
        end
        check(depth + 1, level)
        escapes = escapes + 1
        n = n + 1
        out[n] = "["
        first(a, depth + 1, level)
        n = n + 1
        out[n] = SEP
        second(b, depth + 1, level)
        n = n + 1
        out[n] = "]"
        escapes = escapes - 1
        if tag_like then
          escapes = escapes - 1
          n = n + 1
          out[n] = "]"
        end
      end

      local function write_name(name)
        n = n + 1
        out[n] = quote(name)
      end

      local function class_contents(v, depth, level)
        contents(v, false, depth, level)
      end

      local function body(v, mt, class, depth, level)
        if class == nil then return contents(v, mt == ARRAY, depth, level) end
        check(depth + 2, level)
        tag_open("c")
        local b = #class == 1 and byte(class) or 0
        -- The class's value is a table, so [name, value] is a tag when the name is a letter.
        escapes = escapes + 1
        pair(b >= 97 and b <= 122, depth + 1, level, write_name, class_contents, class, v)
        escapes = escapes - 1
        n = n + 1
        out[n] = "]"
      end

      local function table_value(v, depth, level)
        local mt = getmetatable(v)
        local class
        if mt ~= nil then
          if mt == U64 then
            if not INTEGERS or mtype(rawget(v, 1)) ~= "integer" then
              fail("a savechain.u64 value whose [1] is not an integer", level)
            end
            n = n + 1
            out[n] = tostring(v)
            return
          end
          if mt == BYTES then
            local s = rawget(v, 1)
            if type(s) ~= "string" then fail("a savechain.bytes value whose [1] is not a string", level) end
            check(depth + 1, level)
            tag_open("b")
            n = n + 1
            out[n] = quote_bytes(s) .. "]"
            return
          end
          if mt ~= ARRAY then
            class = class_names[mt]
            if type(class) ~= "string" then
              fail("cannot save a table with a metatable that is not a registered class "
                .. "(register it with savechain.register_class(name, metatable))", level)
            end
          end
        end
        if level >= MAX_DEPTH then
          fail("tables nested more than " .. MAX_DEPTH .. " deep cannot be saved", level)
        end
        if shared then
          if shared[v] then
            local id = ids[v]
            check(depth + 2, level)
            if outer_seen then id = 0 end
            if id then
              tag_open("r")
              n = n + 1
              out[n] = "[" .. id .. "]]"
              return
            end
            id = next_id
            next_id, ids[v] = id + 1, id
            tag_open("s")
            n = n + 1
            out[n] = "[" .. id .. SEP
            escapes = escapes + 2
            body(v, mt, class, depth + 2, level)
            escapes = escapes - 2
            n = n + 1
            out[n] = "]]"
            return
          end
        elseif seen[v] then
          error(MET_AGAIN, 0)
        else
          seen[v] = true
        end
        body(v, mt, class, depth, level)
      end

      function value(v, depth, level)
        local t = type(v)
        if t == "string" then
          if not find(v, "[\128-\255]") or is_utf8(v) then
            n = n + 1
            out[n] = quote(v)
          else
            check(depth + 1, level)
            tag_open("b")
            n = n + 1
            out[n] = quote_bytes(v) .. "]"
          end
        elseif t == "number" then
          n = n + 1
          if is_integer(v) then
            out[n] = integer_text(v)
          else
            if depth >= MAX_DEPTH then check(depth + 1, level) end
            out[n] = pretty and '["d", "' .. spell(v) .. '"]' or '["d","' .. spell(v) .. '"]'
          end
        elseif t == "table" then
          if rawequal(v, null) then
            n = n + 1
            out[n] = "null"
          else
            table_value(v, depth, level)
          end
        elseif t == "boolean" then
          n = n + 1
          out[n] = v and "true" or "false"
        elseif t == "nil" then
          n = n + 1
          out[n] = "null"
        elseif t == "function" then
          fail("cannot save a function", level)
        elseif t == "thread" then
          fail("cannot save a thread (coroutine)", level)
        else
          fail("cannot save a " .. t, level)
        end
      end

      local function array(v, len, depth, level)
        local numbers, tag_like = len <= 4, false
        if numbers then
          for i = 1, len do
            local s = shape(v[i])
            if s ~= S_INT and s ~= S_DOUBLE then
              numbers = false
              break
            end
          end
        end
        if len == 2 and shape(v[1]) == S_LETTER then tag_like = is_tag(v[1], shape(v[2])) end
        if tag_like then
          check(depth + 2, level)
          tag_open("a")
          escapes = escapes + 1
          depth = depth + 1
        end
        check(depth + 1, level)
        local inner = level + 1
        n = n + 1
        out[n] = "["
        if not pretty or numbers then
          for i = 1, len do
            if i > 1 then
              n = n + 1
              out[n] = SEP
            end
            keys[inner] = i
            value(v[i], depth + 1, inner)
          end
        else
          for i = 1, len do
            if i > 1 then
              n = n + 1
              out[n] = ","
            end
            newline(depth + 1)
            keys[inner] = i
            value(v[i], depth + 1, inner)
          end
          newline(depth)
        end
        n = n + 1
        out[n] = "]"
        if tag_like then
          escapes = escapes - 1
          n = n + 1
          out[n] = "]"
        end
      end

      -- `names`: the table's `len` keys, all text, as `contents` met them.
      local function object(v, names, len, depth, level)
        check(depth + 1, level)
        sort(names, bytewise)
        if depth == 0 and meta_first then
          for j = 1, len do
            if names[j] == "meta" then
              for i = j, 2, -1 do names[i] = names[i - 1] end
              names[1] = "meta"
              break
            end
          end
        end
        local inner = level + 1
        n = n + 1
        out[n] = "{"
        for j = 1, len do
          local k = names[j]
          if j > 1 then
            n = n + 1
            out[n] = ","
          end
          newline(depth + 1)
          n = n + 1
          out[n] = members[k]
          keys[inner] = k
          value(v[k], depth + 1, inner)
        end
        newline(depth)
        n = n + 1
        out[n] = "}"
      end

      -- Orders the entries of a keyed table as order.rs does: booleans (false first),
      -- numbers by value (an integer before a double of the same value), strings, byte
      -- strings, tables by their compact text.
      local function keyed(v, depth, level)
        local entries, len = {}, 0
        for k, x in next_key, v do
          if rawequal(k, null) then
            fail("savechain.null cannot be a table key: the save could not be read back", level)
          end
          len = len + 1
          entries[len] = { k, x, key_rank(k) }
        end
        sort(entries, function(a, b)
          local ra, rb = a[3], b[3]
          if ra ~= rb then return ra < rb end
          local x, y = a[1], b[1]
          if ra == 2 then
            if INTEGERS and mtype(x) == "integer" and mtype(y) == "integer" then return x < y end
            -- As doubles, as order.rs compares them; an integer before a double of the
            -- same value, then by their digits.
            local fx, fy = as_double(x), as_double(y)
            if fx ~= fy then return fx < fy end
            local ix, iy = type(x) == "table" or is_integer(x), type(y) == "table" or is_integer(y)
            if ix ~= iy then return ix end
            local tx, ty = tostring(x), tostring(y)
            -- Two u64 boxes of the same bits are two keys: their values decide.
            if tx == ty then return bytewise(key_text(a[2]), key_text(b[2])) end
            return bytewise(tx, ty)
          elseif ra == 1 then
            return x == false and y == true
          elseif ra == 3 or ra == 4 then
            if type(x) == "table" then x = rawget(x, 1) end
            if type(y) == "table" then y = rawget(y, 1) end
            -- Two boxes of the same bytes are two keys: their values decide.
            if x == y then return bytewise(key_text(a[2]), key_text(b[2])) end
            return bytewise(x, y)
          elseif ra == 5 then
            -- By their texts, made only when two tables as keys meet, and once each.
            local tx, ty = key_text(x), key_text(y)
            if tx ~= ty then return bytewise(tx, ty) end
            return bytewise(key_text(a[2]), key_text(b[2]))
          end
          return false
        end)
        check(depth + 2, level)
        tag_open("t")
        n = n + 1
        if len == 0 then
          out[n] = "[]]"
          return
        end
        out[n] = "["
        escapes = escapes + 1
        local inner = level + 1
        for i = 1, len do
          local e = entries[i]
          if i > 1 then
            n = n + 1
            out[n] = ","
          end
          newline(depth + 2)
          local k, x = e[1], e[2]
          keys[inner] = k
          pair(shape(k) == S_LETTER and is_tag(k, shape(x)), depth + 2, inner, value, value, k, x)
        end
        newline(depth + 1)
        n = n + 1
        out[n] = "]"
        escapes = escapes - 1
        n = n + 1
        out[n] = "]"
      end

      function contents(v, marked, depth, level)
        local len, ints, strings, names = 0, true, true, nil
        for k in next_key, v do
          len = len + 1
          if type(k) == "number" and is_integer(k) then
            strings = false
          else
            ints = false
            if strings then
              if type(k) ~= "string" then
                strings = false
              else
                local member = members[k]
                if member == nil then
                  member = false
                  if is_utf8(k) then
                    member = '"' .. (find(k, CONTROL) and gsub(k, CONTROL, ESCAPES) or k) .. COLON
                  end
                  members[k] = member
                end
                strings = member and true or false
                -- Kept for `object`, which then needs no walk of its own.
                if strings then
                  if names == nil then names = {} end
                  names[len] = k
                end
              end
            end
          end
        end
        if len == 0 then
          check(depth + 1, level)
          n = n + 1
          out[n] = marked and "[]" or "{}"
        elseif ints and is_sequence(v, len) then
          array(v, len, depth, level)
        elseif strings then
          object(v, names, len, depth, level)
        else
          keyed(v, depth, level)
        end
      end

      -- The compact text of a table used as a key, which orders it among the others.
      -- (`texts` keeps those of tables for the whole encoding: a table's text depends on
      -- nothing else, and keys within keys would otherwise be written again and again.)
      texts = texts or {}
      function key_text(k)
        if type(k) ~= "table" then return encoder(false, shared, seen, texts)(k) end
        local text = texts[k]
        if text == nil then
          text = encoder(false, shared, seen, texts)(k)
          texts[k] = text
        end
        return text
      end

      return function(v)
        value(v, 0, 0)
        if pretty then
          n = n + 1
          out[n] = "\n"
        end
        return concat(out, "", 1, n)
      end
    end

    -- A number key as a double, as order.rs converts it (a u64 box: the integer it holds,
    -- rounded once).
    function as_double(x)
      if type(x) == "table" then
        local bits = rawget(x, 1)
        local low = bits % 4294967296
        return ((bits - low) / 4294967296 + 4294967296) * 4294967296.0 + low
      end
      return x * 1.0
    end

    -- Whether the `len` keys of `t`, all integers, are 1 to `len`. (Keeping the least and
    -- greatest key while walking them would do, but LuaJIT 2.1.0-beta3's compiler, as
    -- Debian ships it, now and then keeps the wrong greatest one.)
    function is_sequence(t, len)
      for i = 1, len do
        if rawget(t, i) == nil then return false end
      end
      return true
    end

    -- Finds the tables reached more than once (keys included).
    local function find_shared(root)
      local seen, shared, any = {}, {}, false
      local function walk(v, level)
        if type(v) ~= "table" or rawequal(v, null) or level > MAX_DEPTH then return end
        local mt = getmetatable(v)
        if mt == U64 or mt == BYTES then return end
        if seen[v] then
          shared[v], any = true, true
          return
        end
        seen[v] = true
        for k, x in next_key, v do
          walk(k, level + 1)
          walk(x, level + 1)
        end
      end
      walk(root, 0)
      return any and shared or nil
    end

    function c.encode(value, compact)
      bytewise = bytewise_comparison()
      local pretty = not compact
      local ok, text = pcall(encoder(pretty, nil), value)
      if not ok and text == MET_AGAIN then
        ok, text = pcall(encoder(pretty, find_shared(value)), value)
      end
      if ok then return text end
      if type(text) == "table" then return nil, text[1] end
      error(text, 0)
    end

    -- Reading -----------------------------------------------------------------------------

    local Reader = {}

    -- Where byte `at` of `text` is, as a person counts: "line L, column C".
    local function where(text, at)
      local line, start = 1, 1
      local i = find(text, "\n", 1, true)
      while i and i < at do
        line, start = line + 1, i + 1
        i = find(text, "\n", i + 1, true)
      end
      -- A byte order mark is no character of the text, as the Rust reader counts.
      if start == 1 and sub(text, 1, 3) == "\239\187\191" then start = 4 end
      local _, count = gsub(sub(text, start, at - 1), "[^\128-\191]", "")
      return "line " .. line .. ", column " .. (count + 1)
    end

    local function fail(text, at, message)
      error({ where(text, at) .. ": " .. message }, 0)
    end

    local function found(text, at)
      if at > #text then return "the end of the text" end
      local ch = match(text, "^[%z\1-\127\194-\244][\128-\191]*", at) or sub(text, at, at)
      return "'" .. ch .. "'"
    end

    local read_value

    local WHITE = "^[ \t\r\n]*()"

    local function read_string(text, at)
      local stop = find(text, CONTROL, at + 1)
      if stop == nil then fail(text, at, "a string is not closed") end
      local b = byte(text, stop)
      if b == 34 then
        return sub(text, at + 1, stop - 1), stop + 1
      end
      local parts, n, from = {}, 0, at + 1
      while true do
        b = byte(text, stop)
        if b == 34 then
          n = n + 1
          parts[n] = sub(text, from, stop - 1)
          return concat(parts, "", 1, n), stop + 1
        elseif b == 92 then
          n = n + 1
          parts[n] = sub(text, from, stop - 1)
          local e = byte(text, stop + 1)
          local piece
          if e == 117 then
            local hex = match(text, "^%x%x%x%x", stop + 2)
            if not hex then fail(text, stop, "expected four hexadecimal digits after \\u") end
            local u = tonumber(hex, 16)
            from = stop + 6
            if u >= 0xD800 and u <= 0xDBFF then
              local low = match(text, "^\\u(%x%x%x%x)", from)
              low = low and tonumber(low, 16)
              if not low then
                fail(text, stop, "an unpaired surrogate escape (\\u" .. hex .. ")")
              elseif low < 0xDC00 or low > 0xDFFF then
                -- Another escape follows, and it is the one that is wrong.
                fail(text, from, "expected a low surrogate (\\udc00 to \\udfff) after a high surrogate")
              end
              u = 0x10000 + (u - 0xD800) * 1024 + (low - 0xDC00)
              from = from + 6
            elseif u >= 0xDC00 and u <= 0xDFFF then
              fail(text, stop, "an unpaired surrogate escape (\\u" .. hex .. ")")
            end
            if u < 128 then piece = char(u)
            elseif u < 2048 then piece = char(192 + floor(u / 64), 128 + u % 64)
            elseif u < 65536 then piece = char(224 + floor(u / 4096), 128 + floor(u / 64) % 64, 128 + u % 64)
            else
              piece = char(240 + floor(u / 262144), 128 + floor(u / 4096) % 64, 128 + floor(u / 64) % 64,
                128 + u % 64)
            end
          else
            piece = ({ [34] = '"', [92] = "\\", [47] = "/", [98] = "\8", [102] = "\12", [110] = "\n",
              [114] = "\r", [116] = "\t" })[e]
            if not piece then fail(text, e and stop + 1 or stop, "an unknown escape \\" .. (e and char(e) or "")) end
            from = stop + 2
          end
          n = n + 1
          parts[n] = piece
        elseif b == nil then
          fail(text, at, "a string is not closed")
        else
          if b == 10 or b == 13 then
            fail(text, stop, "a string runs to the end of its line: is its closing '\"' missing?")
          end
          fail(text, stop, "a control character in a string must be escaped")
        end
        stop = find(text, CONTROL, from)
        if stop == nil then fail(text, at, "a string is not closed") end
      end
    end

    -- The double a JSON number's text spells. LuaJIT's tonumber gives nil for an exponent
    -- past its range, whose value is 0 or infinite.
    local function to_double(s)
      local x = tonumber(s)
      if x ~= nil then return x * 1.0 end
      local negative = byte(s, 1) == 45
      if match(s, "[eE]%-") or not find(match(s, "^[^eE]*"), "[1-9]") then
        return negative and NEGATIVE_ZERO or 0.0
      end
      return negative and -huge or huge
    end

    -- A JSON number's text at `at`: its value (nil when it is an integer out of range) and
    -- whether it had a fraction or an exponent.
    local function read_number(text, at)
      local s, stop = match(text, "^(-?%d+)()", at)
      if not s then
        if byte(text, at) == 45 then
          fail(text, at + 1, "expected a digit after '-', found " .. found(text, at + 1))
        end
        fail(text, at, "expected a value, found " .. found(text, at))
      end
      local b = byte(text, stop)
      if (b == 120 or b == 88) and (s == "0" or s == "-0") then
        -- A hexfloat typed without its quotes: say what to write, at the number's start.
        local i = at
        if byte(text, i) == 45 then i = i + 1 end
        while true do
          local c = byte(text, i)
          if not c then break end
          local after_p = (c == 43 or c == 45) and i > at and find(sub(text, i - 1, i - 1), "[pP]")
          if not (after_p or find(char(c), "[%x%.xXpP]")) then break end
          i = i + 1
        end
        local hex = sub(text, at, i - 1)
        if find(hex, "[pP]") then
          fail(text, at, 'a hexfloat must be quoted: ["d", "' .. hex .. '"] (JSON has no hexadecimal numbers)')
        end
        fail(text, at, "JSON has no hexadecimal numbers: write the integer in decimal, or a double"
          .. ' as a quoted hexfloat with its exponent, such as ["d", "' .. hex .. 'p+0"]')
      end
      local lead, second = byte(s, 1), byte(s, 2)
      if (lead == 48 and second) or (lead == 45 and second == 48 and byte(s, 3)) then
        fail(text, at, "a number does not start with 0 (JSON allows no leading zeros)")
      end
      if b == 46 or b == 101 or b == 69 then
        -- An error is at the byte where a digit is missing.
        if b == 46 then
          local digits = match(text, "^%.%d+()", stop)
          if not digits then
            fail(text, stop + 1, "expected a digit after the decimal point, found " .. found(text, stop + 1))
          end
          stop = digits
          b = byte(text, stop)
        end
        if b == 101 or b == 69 then
          local digits = match(text, "^[eE][-+]?%d+()", stop)
          if not digits then
            local missing = match(text, "^[eE][-+]?()", stop)
            fail(text, missing, "expected a digit in the exponent, found " .. found(text, missing))
          end
          stop = digits
        end
        s = sub(text, at, stop - 1)
        local x = to_double(s)
        if x == huge or x == -huge then fail(text, at, "the number " .. s .. " is too large for a double") end
        return x, stop, S_NUMBER, s
      end
      local x = tonumber(s)
      if INTEGERS then
        if mtype(x) == "integer" then return x, stop, S_INT, s end
        -- Past the 64-bit integers: a u64 up to 2^64-1, as its bits, or out of range.
        local digits = match(s, "^0*(%d+)$")
        if digits and (#digits < 20 or (#digits == 20 and digits <= "18446744073709551615")) then
          local n = 0
          for i = 1, #digits do n = n * 10 + (byte(digits, i) - 48) end
          return setmetatable({ n }, U64), stop, S_INT, s
        end
        return nil, stop, S_INT, s
      end
      if x == 0 then x = 0 end -- "-0" is the integer 0, not -0.0
      if #s < 16 then return x, stop, S_INT, s end
      local digits = match(s, "^-?(%d+)$")
      if #digits < 16 or (#digits == 16 and digits <= "9007199254740992") then return x, stop, S_INT, s end
      return nil, stop, S_INT, s
    end

    local function out_of_range(text, at, s)
      if INTEGERS then
        fail(text, at, "the integer " .. s .. " is outside -2^63 to 2^64-1")
      end
      fail(text, at, "the integer " .. s .. " is beyond 2^53, which this Lua keeps only as a rounded double")
    end

    -- Text as bytes: each character of a `b` tag's string (U+0000 to U+00FF) is a byte.
    local function latin1(text, at, s)
      if not find(s, "[\128-\255]") then return s end
      if find(s, "[\128-\193\196-\255][\128-\191]*", 1) and find(gsub(s, "[\194\195][\128-\191]", ""), "[\128-\255]") then
        fail(text, at, "a byte string holds only characters U+0000 to U+00FF")
      end
      return (gsub(s, "([\194\195])([\128-\191])", function(lead, cont)
        return char((byte(lead) - 192) * 64 + byte(cont) - 128)
      end))
    end

    -- An error of what tags mean that the text as a whole may not get to: raised once the
    -- text is read, so that an error of the text itself comes first, as in the Rust reader.
    local function later(r, at, message)
      if r.later == nil then r.later = { at, message } end
    end

    -- The value of the tag [letter, second], with second's shape, its text when it is a
    -- number, and where it starts.
    local function tag_value(r, at, letter, second, second_shape, second_text, second_at)
      local text = r.text
      if letter == "d" then
        if second_shape == S_STRING or second_shape == S_LETTER then
          local x, why = parse_hexfloat(second)
          if x == nil then
            if tonumber(second) then why = why .. " (a decimal is written without quotes: [\"d\", " .. second .. "])" end
            fail(text, second_at, why .. ", found \"" .. second .. "\"")
          end
          return x, S_DOUBLE
        elseif second_shape == S_INT or second_shape == S_NUMBER then
          local x = to_double(second_text)
          if x == huge or x == -huge then
            fail(text, second_at, "the number " .. second_text .. " is too large for a double")
          end
          if x == 0 and byte(second_text, 1) == 45 then x = NEGATIVE_ZERO end
          return x, S_DOUBLE
        end
        fail(text, second_at, "a double is [\"d\", \"<hexfloat>\"] or [\"d\", <number>]; an array of "
          .. "\"d\" and another value is written [\"a\", [\"d\", ...]]")
      elseif letter == "b" then
        if second_shape == S_STRING or second_shape == S_LETTER then
          local bytes = latin1(text, second_at, second)
          if is_utf8(bytes) then return setmetatable({ bytes }, BYTES), S_BYTES end
          return bytes, S_BYTES
        end
        fail(text, second_at, "a byte string is [\"b\", \"<string>\"]; an array of \"b\" and another "
          .. "value is written [\"a\", [\"b\", ...]]")
      elseif letter == "a" then
        if second_shape ~= S_ARRAY then fail(text, second_at, "[\"a\", ...] holds an array") end
        return second, S_ARRAY
      elseif letter == "t" then
        if second_shape ~= S_ARRAY then
          fail(text, second_at, "[\"t\", ...] holds an array of [key, value] pairs")
        end
        local t = {}
        for i = 1, #second do
          local pair = second[i]
          if type(pair) ~= "table" or getmetatable(pair) ~= nil or r.made[pair] or #pair ~= 2 then
            fail(text, second_at, "entry " .. (i - 1) .. " of a keyed table is not a [key, value] pair")
          end
          local k, v = pair[1], pair[2]
          if rawequal(k, null) then fail(text, second_at, "a keyed table's key cannot be null") end
          if type(k) == "number" and k ~= k then fail(text, second_at, "a keyed table's key cannot be NaN") end
          if rawget(t, k) ~= nil then
            later(r, second_at, "the key " .. tostring(k) .. " is given twice in a keyed table")
          end
          t[k] = v
        end
        r.made[t] = "t"
        return t, S_TABLE
      elseif letter == "s" then
        -- (A number, a double or a byte string may stand second: nothing to index.)
        local id, body
        if second_shape == S_ARRAY then id, body = second[1], second[2] end
        if second_shape ~= S_ARRAY or #second ~= 2 or type(id) ~= "number" or not is_integer(id)
          or id < 1 or type(body) ~= "table" or rawequal(body, null) or getmetatable(body) == U64
          or getmetatable(body) == BYTES or r.made[body] == "s" or r.made[body] == "r" then
          fail(text, second_at, "a shared table is [\"s\", [id, table]], the table an array, an object, "
            .. "a keyed table or a class instance")
        end
        if r.defined[id] then
          later(r, second_at, "the shared table " .. id .. " is defined twice")
          return body, S_TABLE
        end
        r.defined[id] = true
        local placeholder = r.tables[id]
        if placeholder == nil then
          r.tables[id], r.made[body] = body, "s"
          return body, S_TABLE
        end
        -- Referred to before its definition: the table made for the references gets it.
        for k, v in next_key, body do rawset(placeholder, k, v) end
        setmetatable(placeholder, getmetatable(body))
        r.made[placeholder] = "s"
        return placeholder, S_TABLE
      elseif letter == "r" then
        local id = second_shape == S_ARRAY and second[1] or nil
        if second_shape ~= S_ARRAY or #second ~= 1 or type(id) ~= "number" or not is_integer(id)
          or id < 1 then
          fail(text, second_at, "a reference is [\"r\", [id]]")
        end
        local t = r.tables[id]
        if t == nil then
          t = {}
          r.tables[id], r.made[t] = t, "r"
          r.pending[#r.pending + 1] = { id, second_at }
        end
        return t, S_TABLE
      elseif letter == "c" then
        local name, body
        if second_shape == S_ARRAY then name, body = second[1], second[2] end
        if second_shape ~= S_ARRAY or #second ~= 2 or type(name) ~= "string" or name == "" or type(body) ~= "table"
          or rawequal(body, null) or (getmetatable(body) ~= nil and getmetatable(body) ~= ARRAY)
          or (r.made[body] ~= nil and r.made[body] ~= "t") then
          fail(text, second_at, "a class instance is [\"c\", [\"ClassName\", table]], the table an array, an "
            .. "object or a keyed table")
        end
        local mt = c.classes[name]
        if mt == nil then
          later(r, second_at, "class \"" .. name .. "\" is not registered (register its metatable with "
            .. "savechain.register_class)")
          return body, S_TABLE
        end
        return setmetatable(body, mt), S_TABLE
      end
      fail(text, second_at, "the tag \"" .. letter .. "\" is reserved for later revisions of the format; an "
        .. "array of \"" .. letter .. "\" and another value is written [\"a\", [\"" .. letter .. "\", ...]]")
    end

    -- Where the array or object starting at `at` ends (just after its closing bracket), by
    -- brackets and strings alone, or nil if the text ends first.
    local function value_end(text, at)
      local depth, i = 0, at
      while true do
        i = find(text, '[][{}"]', i)
        if i == nil then return nil end
        local b = byte(text, i)
        if b == 34 then
          repeat
            i = find(text, '["\\]', i + 1)
            if i == nil then return nil end
            local quote = byte(text, i) == 34
            if not quote then i = i + 1 end
          until quote
        elseif b == 91 or b == 123 then
          depth = depth + 1
        else
          depth = depth - 1
          if depth == 0 then return i + 1 end
        end
        i = i + 1
      end
    end

    -- Reads the array whose '[' is at `at`: the value, where it ends, and its shape. A
    -- `literal` array (what an ["a", ...] escape holds) is an array whatever its shape.
    local function read_array(r, at, depth, literal)
      local text = r.text
      if depth > read_depth then
        fail(text, at, "nested more than " .. read_depth .. " arrays and objects deep")
      end
      if byte(text, at + 1) == 34 and not literal then
        -- A double as the writer spells it, the commonest array of all.
        local spelling, stop = match(text, '^%["d", ?"(%-?0x[01][.%x]*p[-+]%d+)"%]()', at)
        if spelling then
          local x, why = read_spelling(spelling)
          if x == nil then fail(text, find(text, "\"", at + 4, true), why .. ", found \"" .. spelling .. "\"") end
          return x, stop, S_DOUBLE
        end
      end
      local i = at + 1
      if (byte(text, i) or 33) <= 32 then i = match(text, WHITE, i) end
      if byte(text, i) == 93 then return setmetatable({}, ARRAY), i + 1, S_ARRAY end
      local items, n = {}, 0
      local first_letter, second_shape, second_text, second_at, big
      while true do
        local v, s, vtext
        local start = i
        if n == 1 and first_letter == "a" and not literal and byte(text, i) == 91 then
          -- ["a", [...]] is an escape, and what it holds a literal array, when the array
          -- closes right after: looked ahead, since reading it depends on it.
          local stop = value_end(text, i)
          local escape = stop and match(text, "^[ \t\r\n]*%]", stop)
          v, i, s = read_array(r, i, depth + 1, escape and true or false)
        else
          v, i, s, vtext = read_value(r, i, depth)
        end
        n = n + 1
        if n == 1 then
          if s == S_LETTER then first_letter = v end
        elseif n == 2 then
          second_shape, second_text, second_at = s, vtext, start
        end
        if v == nil then
          -- An integer out of range is a double's value in ["d", ...], and an error elsewhere.
          if n ~= 2 or first_letter ~= "d" or literal then out_of_range(text, start, vtext) end
          big, v = vtext, false
        end
        items[n] = v
        if (byte(text, i) or 33) <= 32 then i = match(text, WHITE, i) end
        local b = byte(text, i)
        if b == 93 then
          i = i + 1
          break
        elseif b ~= 44 then
          fail(text, i, "expected ',' or ']' after an element of an array, found " .. found(text, i))
        end
        i = i + 1
        if (byte(text, i) or 33) <= 32 then i = match(text, WHITE, i) end
        if byte(text, i) == 93 then
          fail(text, i, "expected another element after ',' (JSON allows no trailing comma), found ']'")
        end
      end
      if not literal and n == 2 and first_letter ~= nil and is_tag(first_letter, second_shape) then
        local v, s = tag_value(r, at, first_letter, items[2], second_shape, big or second_text, second_at)
        return v, i, s
      end
      if big then out_of_range(text, second_at, big) end
      return items, i, S_ARRAY
    end

    local function read_object(r, at, depth)
      local text = r.text
      if depth > read_depth then
        fail(text, at, "nested more than " .. read_depth .. " arrays and objects deep")
      end
      local t = {}
      local i = at + 1
      if (byte(text, i) or 33) <= 32 then i = match(text, WHITE, i) end
      if byte(text, i) == 125 then return t, i + 1, S_OBJECT end
      while true do
        if byte(text, i) ~= 34 then
          fail(text, i, "expected a key (a string in double quotes), found " .. found(text, i))
        end
        local key, key_at = nil, i
        key, i = read_string(text, i)
        if (byte(text, i) or 33) <= 32 then i = match(text, WHITE, i) end
        if byte(text, i) ~= 58 then fail(text, i, "expected ':' after a key, found " .. found(text, i)) end
        local v, vtext
        local value_at = match(text, WHITE, i + 1)
        v, i, _, vtext = read_value(r, value_at, depth)
        if v == nil then out_of_range(text, value_at, vtext) end
        -- After its value, as the Rust reader checks it: an error in the value comes first.
        if rawget(t, key) ~= nil then
          fail(text, key_at, "the key \"" .. key .. "\" is given twice in this object")
        end
        t[key] = v
        if (byte(text, i) or 33) <= 32 then i = match(text, WHITE, i) end
        local b = byte(text, i)
        if b == 125 then break end
        if b ~= 44 then
          fail(text, i, "expected ',' or '}' after a member of an object, found " .. found(text, i))
        end
        i = i + 1
        if (byte(text, i) or 33) <= 32 then i = match(text, WHITE, i) end
        if byte(text, i) == 125 then
          fail(text, i, "expected another key after ',' (JSON allows no trailing comma), found '}'")
        end
      end
      return t, i + 1, S_OBJECT
    end

    -- Reads the value at `at`: the value (nil for an integer out of range), where it ends,
    -- its shape and, for numbers, its text.
    function read_value(r, at, depth)
      local text = r.text
      local b = byte(text, at)
      if b == 34 then
        local s, i = read_string(text, at)
        local b1 = byte(s, 1)
        if #s == 1 and b1 >= 97 and b1 <= 122 then return s, i, S_LETTER end
        return s, i, S_STRING
      elseif b == 91 then
        return read_array(r, at, depth + 1)
      elseif b == 123 then
        return read_object(r, at, depth + 1)
      elseif b == 116 and sub(text, at, at + 3) == "true" then
        return true, at + 4, S_BOOL
      elseif b == 102 and sub(text, at, at + 4) == "false" then
        return false, at + 5, S_BOOL
      elseif b == 110 and sub(text, at, at + 3) == "null" then
        return null, at + 4, S_NULL
      end
      return read_number(text, at)
    end

    function Reader.read(text, max_depth)
      read_depth = max_depth or MAX_DEPTH
      -- The whole text first, as the Rust reader does, so that an invalid byte is the error
      -- wherever it stands (Lua 5.3 and later check it in C; before, invalid_at walks the
      -- bytes above 127).
      if not is_utf8(text) then fail(text, invalid_at(text), "invalid UTF-8") end
      local start = 1
      if sub(text, 1, 3) == "\239\187\191" then start = 4 end
      -- The shared tables by id, the ids defined, references waiting for their definition,
      -- and which tag made each table a tag made (what a tag may hold depends on it).
      local r = { text = text, tables = {}, defined = {}, pending = {}, made = {} }
      local i = start
      if (byte(text, i) or 33) <= 32 then i = match(text, WHITE, i) end
      if i > #text then fail(text, i, "expected a value, found the end of the text") end
      local v, s, vtext
      v, i, s, vtext = read_value(r, i, 0)
      if v == nil then out_of_range(text, start, vtext) end
      if (byte(text, i) or 33) <= 32 then i = match(text, WHITE, i) end
      if i <= #text then fail(text, i, "expected the end of the text after the value, found " .. found(text, i)) end
      if r.later then fail(text, r.later[1], r.later[2]) end
      for _, p in ipairs(r.pending) do
        if not r.defined[p[1]] then fail(text, p[2], "the shared table " .. p[1] .. " is referred to but never defined") end
      end
      return v
    end

    function c.decode(text, max_depth)
      -- Compressed save text (section 12 of FORMAT.md): this library reads only plain text.
      local codec = (text:sub(1, 4) == "\40\181\47\253" and "zstd") or (text:sub(1, 2) == "\31\139" and "gzip")
      if codec then
        return false, "the text is " .. codec .. "-compressed: the one-file library reads plain text "
          .. "(decompress it first, e.g. save-upgrade fmt --compress none FILE, or use the native module)"
      end
      local ok, value = pcall(Reader.read, text, max_depth)
      if ok then return true, value end
      if type(value) == "table" then return false, value[1] end
      error(value, 0)
    end

    c.is_integer, c.hexfloat, c.is_utf8 = is_integer, hexfloat, is_utf8
    return c
  end)()
  -- savechain: pure-Lua codec ends
end

-- Tables are walked with `pairs` called by another name, as the codec walks them with
-- `next_key`: LuaJIT specializes a loop whose iterator is spelt `pairs` or `next`, and
-- Debian's LuaJIT (2.1.0-beta3) compiles that loop wrongly once it is hot (LuaJIT #827).
local each_pair = pairs

-- A value as an error shows it: a string in quotes, so that "1" is not taken for 1.
local function shown(v)
  if type(v) == "string" then return ("%q"):format(v) end
  return tostring(v)
end

-- Integers and floats, where Lua 5.3 and later tell them apart.
local number_type = math.type or function(x)
  if type(x) == "number" then return "float" end
end

local function is_integer(x)
  if math.type then return math.type(x) == "integer" end
  return type(x) == "number" and x == math.floor(x) and x > -2 ^ 53 and x < 2 ^ 53
end

-- Floats equal bit for bit; before Lua 5.3, NaNs are all equal.
local same_float
if string.pack then
  same_float = function(x, y) return string.pack("<d", x) == string.pack("<d", y) end
else
  same_float = function(x, y)
    if x ~= x then return y ~= y end
    return x == y and 1 / x == 1 / y
  end
end

local M = {}

-- The version of savechain this file is part of (the crates' and the rocks' version).
M._VERSION = "0.1.0"

-- JSON null. A null read from a save arrives as this value (a table cannot hold nil) and
-- is written back as null.
M.null = core.null

-- Marks `t` (or a new table) as an array, so that it is saved as [] even when empty.
-- Arrays read from a save that are empty arrive marked.
function M.array(t)
  t = t or {}
  if type(t) ~= "table" then
    error("savechain.array expects a table (or nothing, for a new one), not a " .. type(t), 2)
  end
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
  -- The 64 bits as four 16-bit limbs, divided by 10 digit by digit: exact in any Lua
  -- arithmetic, and written without 5.3's operators, so that this file loads in Lua 5.1.
  local low = n % 4294967296
  local high = (n - low) / 4294967296 + 4294967296
  local limbs = { math.floor(high / 65536), high % 65536, math.floor(low / 65536), low % 65536 }
  local digits, more = {}, true
  while more do
    local rest = 0
    more = false
    for i = 1, 4 do
      local value = rest * 65536 + limbs[i]
      limbs[i] = math.floor(value / 10)
      rest = value - limbs[i] * 10
      more = more or limbs[i] ~= 0
    end
    table.insert(digits, 1, string.format("%d", rest))
  end
  return table.concat(digits)
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
  if not math.type then
    -- Every number is a double: only those up to 2^53 are exact.
    if #digits > 16 or (#digits == 16 and digits > "9007199254740992") then
      error("savechain.u64: integers beyond 2^53 need Lua 5.3 or later", 2)
    end
    return tonumber(digits)
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
  if not (core.is_utf8 or function(s) return utf8.len(s) ~= nil end)(name) then
    error("savechain.register_class: a class name is UTF-8 text (it is written in the save)", 2)
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
  if opts ~= nil then
    -- A misspelt option is an error rather than pretty text nobody asked for.
    if type(opts) ~= "table" then
      error("savechain.encode: options are a table such as { compact = true }, not a " .. type(opts), 2)
    end
    for key, v in each_pair(opts) do
      if key ~= "compact" or type(v) ~= "boolean" then
        error("savechain.encode: the only option is compact = true or false, not " .. tostring(key), 2)
      end
    end
  end
  local text, err = core.encode(value, opts ~= nil and opts.compact == true)
  if text == nil then error(err, 0) end
  return text
end

-- The deepest nesting of arrays and objects (tags count as arrays) that decode reads, in
-- this Lua state; a deeper text is refused where it goes too deep, with its line and
-- column. The format's own limit, 512, is the default and the most it may be.
local FORMAT_MAX_DEPTH = 512
local decode_depth = FORMAT_MAX_DEPTH

-- savechain.decode_max_depth(n) sets the nesting limit of later decodes (and loads) to n,
-- an integer from 1 to 512, and returns it; savechain.decode_max_depth() returns it.
function M.decode_max_depth(n)
  if n ~= nil then
    if type(n) ~= "number" or n ~= math.floor(n) or n < 1 or n > FORMAT_MAX_DEPTH then
      error("savechain.decode_max_depth: the limit is an integer from 1 to " .. FORMAT_MAX_DEPTH
        .. " (the format never nests deeper), not " .. shown(n), 2)
    end
    decode_depth = math.tointeger and math.tointeger(n) or n
  end
  return decode_depth
end

-- The value that save text spells (nil for a text that is `null`). An error is its message
-- alone, with the line and column in the text.
function M.decode(text)
  if type(text) ~= "string" then
    error("savechain.decode expects a string of save text", 2)
  end
  local ok, value = core.decode(text, decode_depth)
  if not ok then error(value, 0) end
  -- A null alone is nil here (in a table, where nil cannot stand, it is savechain.null).
  if rawequal(value, M.null) then return nil end
  return value
end

-- Module state -------------------------------------------------------------------------

local modules = {}       -- name -> { save = function, load = function, version, upgrades }
local kept = {}          -- states of modules not registered in this run, written back as they were
local kept_versions = {} -- and their versions
local kept_meta = {}     -- members of the meta of the save loaded that save writes back

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
  if type(name) ~= "string" or name == "" then
    error("savechain.register expects a module name", 2)
  end
  if name == VERSIONS then
    error("savechain.register: the name " .. VERSIONS .. " is the library's own", 2)
  end
  if type(handlers) ~= "table" or type(handlers.save) ~= "function" or type(handlers.load) ~= "function" then
    error("savechain.register expects { save = function, load = function }", 2)
  end
  for key in each_pair(handlers) do
    if key ~= "save" and key ~= "load" and key ~= "version" and key ~= "upgrades" then
      error("savechain.register: unknown member " .. tostring(key)
        .. " (a module has save, load, version and upgrades)", 2)
    end
  end
  local version, upgrades = handlers.version, handlers.upgrades
  if version == nil and upgrades ~= nil then
    error("savechain.register: upgrades need the module's version (version = N)", 2)
  end
  if version ~= nil then
    if not is_integer(version) or version < 1 then
      error("savechain.register: version is an integer from 1, not " .. shown(version), 2)
    end
    if upgrades ~= nil and type(upgrades) ~= "table" then
      error("savechain.register: upgrades is a table of functions by version", 2)
    end
    for from, upgrade in each_pair(upgrades or {}) do
      if not is_integer(from) or from < 1 or from >= version or type(upgrade) ~= "function" then
        error("savechain.register: upgrades[N] is the function from version N to N + 1, for N from 1 to "
          .. (version - 1) .. "; found upgrades[" .. tostring(from) .. "]", 2)
      end
    end
  end
  modules[name] = handlers
  return handlers
end

-- The state of every module by name, and the versions of those that declare one. `who` is
-- the public function, for messages.
local function states_and_versions(who)
  local states, versions = {}, {}
  for name, state in each_pair(kept) do
    states[name], versions[name] = state, kept_versions[name]
  end
  for name, handlers in each_pair(modules) do
    local ok, state = pcall(handlers.save)
    if not ok then
      error(who .. ": the save function of " .. name .. " failed: " .. tostring(state), 3)
    end
    states[name], versions[name] = state, handlers.version
  end
  return states, versions
end

-- The state of every module, by name, to be saved, with the versions of those that declare
-- one under "savechain.versions".
function M.collect()
  local states, versions = states_and_versions("savechain.collect")
  if next(versions) ~= nil then
    states[VERSIONS] = versions
  end
  return states
end

-- `state` of the module `name`, saved at version `at`, brought to the module's version.
local function upgraded(who, name, handlers, state, at)
  if not is_integer(at) or at < 1 then
    error(who .. ": the version of " .. name .. "'s state is " .. tostring(at) .. ", not an integer from 1", 4)
  end
  if at > handlers.version then
    error((who .. ": the state of %s is version %d, newer than the module (version %d): "
      .. "it was saved by a newer build; nothing was loaded"):format(name, at, handlers.version), 4)
  end
  while at < handlers.version do
    local upgrade = handlers.upgrades and handlers.upgrades[at]
    if upgrade == nil then
      error((who .. ": the state of %s is version %d, and the module has no upgrade from %d "
        .. "to %d; nothing was loaded"):format(name, at, at, at + 1), 4)
    end
    local ok, result = pcall(upgrade, state)
    if not ok then
      error((who .. ": upgrading the state of %s from version %d to %d failed: %s; nothing "
        .. "was loaded"):format(name, at, at + 1, tostring(result)), 4)
    end
    if result ~= nil then state = result end
    at = at + 1
  end
  return state
end

-- Hands each registered module its state from `states` (by name), upgraded from its version
-- in `versions` first; keeps the states of modules not registered. `who` names the public
-- function in messages, which are raised at the level of its caller.
-- `meta_kept`: the members of the save's meta that the next save writes back; kept with
-- the states of unregistered modules before any load runs, so that after a failing load
-- the next save is still of one save, never the states of one and the meta of another.
local function restore_states(who, states, versions, meta_kept)
  local ready = {}
  for name, handlers in each_pair(modules) do
    local state = states[name]
    if state ~= nil and handlers.version ~= nil then
      state = upgraded(who, name, handlers, state, versions[name] or 1)
    end
    ready[name] = state
  end
  kept, kept_versions, kept_meta = {}, {}, meta_kept
  for name, state in each_pair(states) do
    if name ~= VERSIONS and modules[name] == nil then
      kept[name], kept_versions[name] = state, versions[name]
    end
  end
  -- In name order, so that every Lua loads them alike; a failing load is named.
  local names = {}
  for name in each_pair(modules) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local ok, err = pcall(modules[name].load, ready[name])
    if not ok then
      error(who .. ": the load function of " .. name .. " failed: " .. tostring(err), 3)
    end
  end
end

-- Hands each registered module its state from a save, upgraded first when the module
-- declares a newer version than the state's; when one cannot be (a state from a newer
-- build, a failing upgrade), it is an error and no module is loaded. Modules are loaded
-- in the order of their names; a `load` that fails is an error naming its module (the
-- modules before it are loaded). States of modules that are not registered are kept, with
-- their versions, and saved again, so a save never loses them.
function M.restore(states)
  states = states or {}
  if type(states) ~= "table" then
    error("savechain.restore expects the table of states savechain.decode gives, not a "
      .. type(states), 2)
  end
  local versions = states[VERSIONS] or {}
  if type(versions) ~= "table" then
    error("savechain.restore: " .. VERSIONS .. " is not a table of versions", 2)
  end
  restore_states("savechain.restore", states, versions, {})
end

-- Whole saves -----------------------------------------------------------------------------

-- A save's `meta.version`, as a Lua game numbers its saves: an integer from 0.
local function is_save_version(v)
  return is_integer(v) and v >= 0
end

-- A semantic version ("1.2.0", "2.0.0-beta.1", "1.0.0+build.5"), as meta.writer must be.
local function is_semver(s)
  if type(s) ~= "string" then return false end
  local core_part, rest = s:match("^(%d+%.%d+%.%d+)(.*)$")
  if core_part == nil then return false end
  for number in core_part:gmatch("%d+") do
    if #number > 1 and number:sub(1, 1) == "0" then return false end
  end
  local pre, build = rest:match("^%-([^+]*)(.*)$")
  if pre == nil then pre, build = nil, rest end
  local function identifiers(list, numeric_rule)
    for id in (list .. "."):gmatch("([^.]*)%.") do
      if id == "" or id:find("[^0-9A-Za-z-]") then return false end
      if numeric_rule and id:find("^%d+$") and #id > 1 and id:sub(1, 1) == "0" then return false end
    end
    return true
  end
  if pre ~= nil and not identifiers(pre, true) then return false end
  if build ~= "" then
    local b = build:match("^%+(.*)$")
    if b == nil or not identifiers(b, false) then return false end
  end
  return true
end

-- Checks `opts` against the options `allowed` (name -> what it must be, for messages).
local function check_options(who, opts, allowed, example)
  if type(opts) ~= "table" then
    error(who .. " expects a table of options such as " .. example .. ", not a " .. type(opts), 3)
  end
  for key in each_pair(opts) do
    if allowed[key] == nil then
      local names = {}
      for name in each_pair(allowed) do names[#names + 1] = name end
      table.sort(names)
      error(who .. ": unknown option " .. tostring(key) .. " (the options are "
        .. table.concat(names, ", ") .. ")", 3)
    end
  end
  if not is_save_version(opts.version) then
    error(who .. ": version is the game's save version, an integer from 0 (meta.version; "
      .. "the version its upgrade steps reach), not " .. shown(opts.version), 3)
  end
  if opts.game ~= nil and (type(opts.game) ~= "string" or opts.game == "") then
    error(who .. ": game is the game's name, a string, not " .. shown(opts.game), 3)
  end
end

-- The text of a save of every registered module (and of the states kept from the save
-- loaded, of modules not registered): {"meta": {"version": opts.version, "writer":
-- opts.writer, "game": opts.game, "modules": {module: version}}, "data": {module: state, ...}},
-- pretty, or on one line with opts.compact; the other members of the meta of the save
-- loaded last (its history) are kept. It is a save as docs/FORMAT.md has it, which
-- save-upgrade shows, edits and upgrades.
function M.save(opts)
  check_options("savechain.save", opts,
    { version = "", writer = "", game = "", compact = "" },
    '{ version = 1, writer = "1.0.0", game = "My Game" }')
  if opts.writer ~= nil and not is_semver(opts.writer) then
    error("savechain.save: writer is the game's release, a semantic version such as \"1.2.0\", not "
      .. shown(opts.writer), 2)
  end
  if opts.compact ~= nil and type(opts.compact) ~= "boolean" then
    error("savechain.save: compact is true or false, not " .. shown(opts.compact), 2)
  end
  local states, versions = states_and_versions("savechain.save")
  local meta = {}
  for key, value in each_pair(kept_meta) do meta[key] = value end
  meta.version, meta.writer, meta.game = opts.version, opts.writer, opts.game
  if next(versions) ~= nil then meta.modules = versions end
  return M.encode({ meta = meta, data = states }, { compact = opts.compact == true })
end

-- Restores every registered module from the text of a save, as `restore` does, and returns
-- the save's meta. The save must be of opts.version: a newer one was written by a newer
-- release, and an older one needs the game's upgrade steps first (chain:upgrade with the
-- native module, or save-upgrade --upgrades DIR); with opts.game, it must name that game.
-- Nothing is loaded when it is refused.
function M.load(text, opts)
  if type(text) ~= "string" then
    error("savechain.load expects the text of a save, not a " .. type(text), 2)
  end
  check_options("savechain.load", opts, { version = "", game = "" },
    '{ version = 1, game = "My Game" }')
  local save = M.decode(text)
  if type(save) ~= "table" or getmetatable(save) ~= nil then
    error("savechain.load: not a save: a save is an object with \"meta\" and \"data\"", 2)
  end
  local meta = rawget(save, "meta")
  if meta == nil then
    error("savechain.load: not a save: no \"meta\" member (the text of "
      .. "savechain.encode(savechain.collect()) is loaded with savechain.restore(savechain.decode(text)))", 2)
  end
  for key in each_pair(save) do
    if key ~= "meta" and key ~= "data" then
      error("savechain.load: not a save: a member " .. tostring(key) .. " beside \"meta\" and \"data\"", 2)
    end
  end
  if type(meta) ~= "table" or getmetatable(meta) ~= nil or not is_save_version(rawget(meta, "version")) then
    error("savechain.load: not a save: meta.version must be an integer from 0", 2)
  end
  local version, game = meta.version, meta.game
  if opts.game ~= nil and game ~= opts.game then
    if type(game) ~= "string" then
      error(("savechain.load: the save names no game (meta.game), and this is %q; nothing was loaded")
        :format(opts.game), 2)
    end
    error(("savechain.load: the save is of the game %q, and this is %q; nothing was loaded")
      :format(game, opts.game), 2)
  end
  if version > opts.version then
    error(("savechain.load: the save is version %s, newer than this game's (version %s): it was "
      .. "written by a newer release; nothing was loaded"):format(tostring(version), tostring(opts.version)), 2)
  end
  if version < opts.version then
    error(("savechain.load: the save is version %s, and this game reads version %s: upgrade it "
      .. "with the game's steps first (chain:upgrade of the native module, or save-upgrade "
      .. "--upgrades DIR --writer VERSION); nothing was loaded"):format(tostring(version), tostring(opts.version)), 2)
  end
  local data = rawget(save, "data")
  if type(data) ~= "table" or (getmetatable(data) ~= nil and getmetatable(data) ~= core.array_mt)
    or (getmetatable(data) == core.array_mt and next(data) ~= nil) then
    error("savechain.load: the save's data is not an object of module states", 2)
  end
  local versions = meta.modules or {}
  if type(versions) ~= "table" then
    error("savechain.load: meta.modules is not a table of versions", 2)
  end
  -- What else meta holds (its history of upgrades, the data versions of mods, a game's own
  -- members) is written back by the next save, as every savechain writer keeps it.
  local meta_kept = {}
  for key, value in each_pair(meta) do
    if key ~= "version" and key ~= "writer" and key ~= "game" and key ~= "modules" then
      meta_kept[key] = value
    end
  end
  restore_states("savechain.load", data, versions, meta_kept)
  return meta
end

-- Equality as a save sees it -------------------------------------------------------------

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
    if number_type(x) ~= number_type(y) or type(x) ~= type(y) then
      return false
    end
    if number_type(x) == "float" then
      return same_float(x, y)
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
    for k, v in each_pair(x) do
      local w
      if type(k) == "table" then
        -- A table key matches the key of `y` it has been paired with.
        local mapped = a_to_b[k]
        if mapped == nil then
          for k2 in each_pair(y) do
            if type(k2) == "table" and b_to_a[k2] == nil then
              -- Try the pairing; undo what it recorded if it fails.
              local saved_a, saved_b = {}, {}
              for t, u in each_pair(a_to_b) do saved_a[t] = u end
              for t, u in each_pair(b_to_a) do saved_b[t] = u end
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
    for k in each_pair(y) do
      if type(k) ~= "table" and rawget(x, k) == nil then
        return false
      end
    end
    return true
  end

  return same(a, b)
end

return M
