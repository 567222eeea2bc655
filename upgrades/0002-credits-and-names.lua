-- Credits become a double; player.name ("Ada Quill") splits into given and family names
-- at the first space.
--
-- The Lua twin of a Rust step: save-upgrade's built-in chain runs the Rust one
-- (src/bin/save-upgrade/starlane.rs), to show a step in Rust; this one makes upgrades/ a
-- whole chain for programs that run Lua steps only (the C ABI, stock Lua). The tests
-- check that both chains make the same saves.
return function(data)
  local wallet = data.player.wallet
  if wallet.credits ~= nil then
    if math.type(wallet.credits) == nil then
      error("player.wallet.credits is not a number")
    end
    wallet.credits = wallet.credits + 0.0
  end
  local name = data.player.name
  if type(name) ~= "string" then
    error("player.name is not a string")
  end
  local given, family = name:match("^(.-) (.*)$")
  data.player.name = { given = given or name, family = family or "" }
end
