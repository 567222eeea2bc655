-- Helpers for the inventory steps. A change here changes the chain's identity, so saves
-- cached by the old helper are upgraded again from their JSON.
local M = {}

-- {"rope", "lamp", "rope"} -> {rope = 2, lamp = 1}
function M.count(items)
  local counts = {}
  for _, item in ipairs(items or {}) do
    counts[item] = (counts[item] or 0) + 1
  end
  return counts
end

return M
