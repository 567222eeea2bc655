-- Runs the Lua tests of the files given, outside savechain's sandbox: in a stock Lua 5.4
-- interpreter with the native module (lua-module/), which tests/lua_stock.rs builds.
--
--   LUA_CPATH="target/release/lib?_lua.so;;" lua5.4 lua/tests/run.lua lua/tests/mapping.lua
--
-- Each file returns a table of test functions; every one of them is run (in name order),
-- each failure printed with its message and traceback, and the exit status is 1 when any
-- failed (2 when a file did not load). The files given share the one Lua state (the
-- classes and modules they register): tests/lua_stock.rs runs one file a process, as
-- tests/lua.rs gives each a sandbox of its own.

local files = { ... }
if #files == 0 then
  io.stderr:write("usage: lua5.4 lua/tests/run.lua FILE.lua...\n")
  os.exit(2)
end

local passed, failed = 0, 0
for _, file in ipairs(files) do
  local chunk, err = loadfile(file)
  if chunk == nil then
    io.stderr:write(err, "\n")
    os.exit(2)
  end
  local ok, tests = pcall(chunk)
  if not ok or type(tests) ~= "table" then
    io.stderr:write(file, ": did not return a table of tests: ", tostring(tests), "\n")
    os.exit(2)
  end
  local names = {}
  for name, test in pairs(tests) do
    if type(test) == "function" then names[#names + 1] = name end
  end
  table.sort(names)
  if #names == 0 then
    io.stderr:write(file, ": has no tests\n")
    os.exit(2)
  end
  for _, name in ipairs(names) do
    local ran, why = xpcall(tests[name], debug.traceback)
    if ran then
      passed = passed + 1
    else
      failed = failed + 1
      print(("FAIL %s: %s: %s"):format(file, name, tostring(why)))
    end
  end
end

print(("%d passed, %d failed"):format(passed, failed))
os.exit(failed == 0 and 0 or 1)
