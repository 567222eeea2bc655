-- Version 1 -> 2: the player's credits move into a wallet, beside a new field for coins.
local up = require("savechain.upgrade")
return function(data)
  up.move(data, "player.credits", "player.wallet.credits")
  up.default(data, "player.wallet.coins", 0)
end
