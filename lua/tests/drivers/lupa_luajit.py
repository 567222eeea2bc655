"""Runs a Lua script in a current LuaJIT 2.1: the one built into PyPI's lupa (lupa.luajit21),
for tests/luajit_hot.rs, as `luajit SCRIPT ARGS...` would (Debian has only 2.1.0-beta3).

    python3 -m pip install lupa
    LUA_PATH="lua/?.lua;;" python3 lua/tests/drivers/lupa_luajit.py SCRIPT ARGS...

Prints LuaJIT's version first ("jit.version: LuaJIT 2.1...") on standard error. The script
gets `arg` as from the command line, LUA_PATH as LuaJIT reads it, and the compiler on as
LuaJIT starts (the script may turn it off). Exits 1 when the script raises, or 3 when lupa
is missing, saying how to install it.
"""

import sys

try:
    import lupa.luajit21 as lupa
except ImportError as missing:
    sys.stderr.write(
        "lupa is not installed, and this test runs the Lua codec in the current LuaJIT 2.1 "
        "it ships: python3 -m pip install lupa (%s)\n" % missing
    )
    sys.exit(3)

if len(sys.argv) < 2:
    sys.stderr.write("usage: python3 lupa_luajit.py SCRIPT ARGS...\n")
    sys.exit(2)

runtime = lupa.LuaRuntime()
sys.stderr.write("jit.version: %s\n" % runtime.eval("jit.version"))
runtime.execute("arg = {[0] = ...}", *sys.argv[1:2])
runtime.execute("for i = 1, select('#', ...) do arg[i] = select(i, ...) end", *sys.argv[2:])
try:
    runtime.execute("local script = arg[0]; dofile(script)")
except lupa.LuaError as error:
    sys.stderr.write("%s\n" % error)
    sys.exit(1)
