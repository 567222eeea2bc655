-- Star systems: an array becomes a table keyed by system id.
local up = require("savechain.upgrade")

return function(data)
  up.index_by(data, "systems", "id")
end
