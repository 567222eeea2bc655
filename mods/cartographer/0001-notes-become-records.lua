-- Each note on a star system becomes a record: its text, and whether it is pinned.
local notes = require("lib.notes")

return function(data)
  local mine = data.mods.cartographer
  for system, text in pairs(mine.notes) do
    if type(text) ~= "string" then
      error(("the note on %s is a %s, not a text"):format(system, type(text)))
    end
    mine.notes[system] = notes.record(text)
  end
end
