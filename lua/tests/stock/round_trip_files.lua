-- Reads each file given with the savechain library that LUA_PATH finds, writes it back
-- pretty, and prints one line a file: "same PATH", "differs PATH" or "refused PATH: why".
-- tests/lua_pure.rs runs it over the repository's saves in stock interpreters.
local savechain = require("savechain")
for _, path in ipairs({ ... }) do
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  local ok, value = pcall(savechain.decode, text)
  if not ok then
    print("refused " .. path .. ": " .. tostring(value))
  else
    local written, out = pcall(savechain.encode, value)
    if not written then
      print("refused " .. path .. ": " .. tostring(out))
    elseif out == text then
      print("same " .. path)
    else
      print("differs " .. path)
    end
  end
end
