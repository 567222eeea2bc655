-- The one-file pure-Lua library (lua/savechain.lua) and its upgrade-step helpers: any
-- Lua 5.1 to 5.4, and LuaJIT through the 5.1 tree. Installed from a checkout with
--   luarocks --lua-version 5.4 make rockspecs/savechain-0.1.0-1.rockspec
rockspec_format = "3.0"
package = "savechain"
version = "0.1.0-1"
source = {
   url = "git+https://github.com/savechain/savechain.git",
   tag = "v0.1.0",
}
description = {
   summary = "Lossless game saves for Lua: every integer, every double bit, tables with cycles",
   detailed = [[
savechain reads and writes Lua values as save text: JSON with a meta section carrying the
save's version, doubles written exactly as C99 hexfloats, integers and floats kept apart,
byte strings, shared tables and cycles, class instances, null and empty arrays. It keeps
the saved state of a game's script modules (register, save, load, module versions with
their upgrades) and gives one-line helpers for upgrade steps (savechain.upgrade).

This rock is the one-file pure-Lua library: it runs in Lua 5.1, 5.2, 5.3, 5.4 and LuaJIT
and loads no native code. The rock savechain-native is the same library with a Rust core
for Lua 5.4 (faster, and it runs chains of upgrade steps in sandboxes); install one of the
two.
]],
   homepage = "https://github.com/savechain/savechain",
   license = "MIT OR Apache-2.0",
   labels = { "serialization", "json", "gamedev", "savegame" },
}
dependencies = {
   "lua >= 5.1, < 5.5",
}
build = {
   -- Not "builtin": that type also copies everything under the checkout's lua/ folder,
   -- which holds the library's tests too (lua/tests/), into the tree as modules.
   type = "none",
   install = {
      lua = {
         savechain = "lua/savechain.lua",
         ["savechain.upgrade"] = "lua/savechain/upgrade.lua",
      },
   },
}
