-- Gold moves into a purse, which can hold other coins later.
local up = require("savechain.upgrade")

return function(data)
  up.move(data, "hero.gold", "hero.purse.gold")
end
