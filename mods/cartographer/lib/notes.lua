-- Helpers shared by the cartographer's steps.
local notes = {}

-- A note as release 1.1.0 keeps it: its text, and whether the player pinned it.
function notes.record(text)
  return { text = text, pinned = false }
end

return notes
