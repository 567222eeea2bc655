-- The savechain library as a native Lua 5.4 module, built by cargo from the crate in
-- lua-module/ (a Rust toolchain of version 1.89 or later is needed). Installed from a
-- checkout with
--   luarocks --lua-version 5.4 make rockspecs/savechain-native-0.1.0-1.rockspec
rockspec_format = "3.0"
package = "savechain-native"
version = "0.1.0-1"
source = {
   url = "git+https://github.com/savechain/savechain.git",
   tag = "v0.1.0",
}
description = {
   summary = "Lossless game saves for Lua 5.4, with a native Rust core and sandboxed upgrades",
   detailed = [[
savechain reads and writes Lua values as save text: JSON with a meta section carrying the
save's version, doubles written exactly as C99 hexfloats, integers and floats kept apart,
byte strings, shared tables and cycles, class instances, null and empty arrays.

This rock is the native module: require("savechain") gives the same library as the rock
savechain (the one-file pure-Lua library), with a Rust core that reads and writes faster
than lua-cjson, plus format (canonical text), decimal (the decimal view), zstd and gzip
compressed saves, and chain (the game's Lua upgrade steps and its mods, each step run in a
sandboxed Lua state of its own). It needs Lua 5.4; for Lua 5.1 to 5.3 and LuaJIT, install
the rock savechain. It provides the modules savechain and savechain.upgrade, as the rock
savechain does: install one of the two.
]],
   homepage = "https://github.com/savechain/savechain",
   license = "MIT OR Apache-2.0",
   labels = { "serialization", "json", "gamedev", "savegame" },
}
supported_platforms = { "linux" }
dependencies = {
   "lua >= 5.4, < 5.5",
}
build = {
   type = "command",
   -- Built without debug information and stripped (3 MB), whatever the workspace's release
   -- profile says. cargo writes the module as libsavechain_lua.so under its target folder,
   -- named here (target/, or $CARGO_TARGET_DIR when set) so that a target-dir of the
   -- user's cargo configuration does not move it; luarocks installs a library under its
   -- file's own name, so it is copied as savechain.so first. The file exports
   -- luaopen_savechain and luaopen_savechain_upgrade: Lua's all-in-one loader finds
   -- require("savechain.upgrade") in it too.
   build_command = [[export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" && CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=true cargo build --release --locked -p savechain-lua && mkdir -p target/luarocks && cp "$CARGO_TARGET_DIR/release/libsavechain_lua.so" target/luarocks/savechain.so]],
   install = {
      lib = {
         savechain = "target/luarocks/savechain.so",
      },
   },
}
