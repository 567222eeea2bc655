-- Ships get shields (100 by default); the tutorial flag is gone.
local up = require("savechain.upgrade")

return function(data)
  up.default(data, "ship.shield", 100.0)
  up.drop(data, "player.tutorial_done")
end
