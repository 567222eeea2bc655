-- Rename player.reputation to player.standing; credits move into player.wallet.
local up = require("savechain.upgrade")

return function(data)
  up.rename(data, "player.reputation", "standing")
  up.move(data, "player.credits", "player.wallet.credits")
end
