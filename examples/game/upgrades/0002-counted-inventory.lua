-- The hero's item list becomes an inventory of counts.
local inventory = require("lib.inventory")

return function(data)
  data.hero.inventory = inventory.count(data.hero.items)
  data.hero.items = nil
end
