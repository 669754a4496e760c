// The ledger's Lua scripts (run by ./redis-ledger.ts, registered in ./redis-scripts.ts): a reservation checked
// against every budget window and written with its holds in one step, and each later move of an entry
// attached, extended, settled, released) checked against its state. Amounts are compared as decimal strings, never
// as Lua's doubles.

/** Exact comparison of non-negative decimal strings: amounts are bigint, Lua numbers are doubles. */
const DECIMAL = `
local function digits(r) -- a table of digits as a decimal string, without leading zeros
  local out = (table.concat(r):gsub('^0+', ''))
  if out == '' then return '0' end
  return out
end
local function add(a, b)
  local r, carry, i, j = {}, 0, #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local s = carry + (i > 0 and tonumber(a:sub(i, i)) or 0) + (j > 0 and tonumber(b:sub(j, j)) or 0)
    table.insert(r, 1, s % 10)
    carry = math.floor(s / 10)
    i = i - 1
    j = j - 1
  end
  return digits(r)
end
local function gt(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
local function sub(a, b) -- a >= b
  local r, borrow, i, j = {}, 0, #a, #b
  while i > 0 do
    local d = tonumber(a:sub(i, i)) - borrow - (j > 0 and tonumber(b:sub(j, j)) or 0)
    if d < 0 then d = d + 10; borrow = 1 else borrow = 0 end
    table.insert(r, 1, d)
    i = i - 1
    j = j - 1
  end
  return digits(r)
end
-- A budget window's counter (negative counts as 0) if adding amount would pass its limit ('' = no limit), else nil.
local function over(key, limit, amount)
  if limit == '' then return nil end
  local spent = redis.call('GET', key) or '0'
  local counted = spent
  if counted:sub(1, 1) == '-' then counted = '0' end
  if gt(add(counted, amount), limit) then return spent end
  return nil
end
`;

/**
 * KEYS: entry, daily, monthly, total, seq, idx all/tenant, idx reserved/tenant, idx all/global, idx reserved/global,
 *       holds (of the entry's kind), credits daily, credits monthly, credits total, idx credits/tenant,
 *       idx credits/global, idx resource
 * ARGV: amount, daily limit, monthly limit, total limit ('' = none), hold expiry, day ttl, month ttl, id,
 *       '1' if credits, '1' if it names a resource, field/value…
 * Returns {2} if the id exists (a retry), {0, window, spent} if a window would overflow, {1} once counted everywhere.
 * The window counters hold both kinds; a credits entry is also counted in the credits counters.
 */
export const RESERVE = `${DECIMAL}
if redis.call('EXISTS', KEYS[1]) == 1 then return {2} end
local amount = ARGV[1]
for w = 1, 3 do
  local spent = over(KEYS[1 + w], ARGV[1 + w], amount)
  if spent then return {0, w, spent} end
end
local credits = ARGV[9] == '1'
local function count(key, ttl)
  redis.call('INCRBY', key, amount)
  if ttl then redis.call('PEXPIRE', key, ttl) end
end
count(KEYS[2], ARGV[6])
count(KEYS[3], ARGV[7])
count(KEYS[4])
if credits then
  count(KEYS[11], ARGV[6])
  count(KEYS[12], ARGV[7])
  count(KEYS[13])
end
local seq = redis.call('INCR', KEYS[5])
local id = ARGV[8]
redis.call('HSET', KEYS[1], 'seq', seq, 'kd', KEYS[2], 'km', KEYS[3], 'kt', KEYS[4], unpack(ARGV, 11))
if credits then redis.call('HSET', KEYS[1], 'cd', KEYS[11], 'cm', KEYS[12], 'ct', KEYS[13]) end
for k = 6, 9 do redis.call('ZADD', KEYS[k], seq, id) end
if credits then
  redis.call('ZADD', KEYS[14], seq, id)
  redis.call('ZADD', KEYS[15], seq, id)
end
if ARGV[10] == '1' then redis.call('ZADD', KEYS[16], seq, id) end
redis.call('ZADD', KEYS[10], ARGV[5], id)
return {1}
`;

/**
 * KEYS: entry, x402 holds, credits holds. ARGV: index key prefix, to, now, id, final amount ('' = the reserved one),
 * '1' to keep the fleet-wide state indexes too (the shared layout; the tenant layout has none), field/value…
 * Moves the entry to `to`, returning its amount to the windows it was counted in when it leaves a counted state, and
 * on a commit for less than was reserved returning the difference (a credits commit for more counts the difference).
 */
export const TRANSITION = `${DECIMAL}
local cur = redis.call('HMGET', KEYS[1], 'state', 'tenant', 'seq', 'amount', 'kd', 'km', 'kt', 'cd', 'cm', 'ct', 'kind')
local state, to = cur[1], ARGV[2]
if not state then return redis.error_reply('TG_NOT_FOUND') end
if state == 'committed' or state == 'released' then
  if state == to then return 0 end
  return redis.error_reply('TG_ILLEGAL ' .. state)
end
local function uncount(by)
  for k = 5, 10 do
    if cur[k] and redis.call('EXISTS', cur[k]) == 1 then redis.call('DECRBY', cur[k], by) end
  end
end
local counted = { reserved = true, uncertain = true, committed = true }
if counted[state] and not counted[to] then uncount(cur[4]) end
local final = ARGV[5]
if to == 'committed' and final ~= '' and gt(cur[4], final) then
  uncount(sub(cur[4], final))
  redis.call('HSET', KEYS[1], 'amount', final, 'reservedAmount', cur[4])
elseif to == 'committed' and final ~= '' and cur[11] == 'credits' and gt(final, cur[4]) then
  local more = sub(final, cur[4])
  for k = 5, 10 do
    if cur[k] and redis.call('EXISTS', cur[k]) == 1 then redis.call('INCRBY', cur[k], more) end
  end
  redis.call('HSET', KEYS[1], 'amount', final, 'reservedAmount', cur[4])
end
local p, tenant, id = ARGV[1], cur[2], ARGV[4]
if state ~= to then
  redis.call('ZREM', p .. state .. ':t:' .. tenant, id)
  redis.call('ZADD', p .. to .. ':t:' .. tenant, cur[3], id)
  if ARGV[6] == '1' then
    redis.call('ZREM', p .. state .. ':g', id)
    redis.call('ZADD', p .. to .. ':g', cur[3], id)
  end
end
if to ~= 'reserved' and to ~= 'uncertain' then redis.call('ZREM', cur[11] == 'credits' and KEYS[3] or KEYS[2], id) end
redis.call('HSET', KEYS[1], 'state', to, 'updatedAt', ARGV[3], unpack(ARGV, 7))
return 1
`;

/**
 * KEYS: entry. ARGV: final amount, now, field/value… A committed credits entry settled again: the difference to its
 * amount counted (or given back) in every window it counts in. Returns the difference as a signed decimal string.
 */
export const RESETTLE = `${DECIMAL}
local cur = redis.call('HMGET', KEYS[1], 'state', 'kind', 'amount', 'kd', 'km', 'kt', 'cd', 'cm', 'ct', 'reservedAmount')
if not cur[1] then return redis.error_reply('TG_NOT_FOUND') end
if cur[1] ~= 'committed' or cur[2] ~= 'credits' then return redis.error_reply('TG_ILLEGAL ' .. cur[1]) end
local final, old = ARGV[1], cur[3]
local delta, sign = '0', ''
if gt(final, old) then delta = sub(final, old) elseif gt(old, final) then delta = sub(old, final); sign = '-' end
for k = 4, 9 do
  if cur[k] and redis.call('EXISTS', cur[k]) == 1 then
    if sign == '-' then redis.call('DECRBY', cur[k], delta) else redis.call('INCRBY', cur[k], delta) end
  end
end
redis.call('HSET', KEYS[1], 'amount', final, 'reservedAmount', cur[10] or old, 'updatedAt', ARGV[2], unpack(ARGV, 3))
return sign .. delta
`;

/**
 * KEYS: entry, x402 holds, credits holds. ARGV: index key prefix, id, now, resource ('' = unchanged), validBefore ('' =
 * unchanged), hold expiry (ms). Moves the entry to its resource's index, and its hold to the new end time.
 */
export const ATTACH = `
local cur = redis.call('HMGET', KEYS[1], 'state', 'seq', 'kind', 'resource')
local state, p, id = cur[1], ARGV[1], ARGV[2]
if not state then return redis.error_reply('TG_NOT_FOUND') end
if ARGV[4] ~= '' then
  if cur[4] then redis.call('ZREM', p .. 'res:' .. cur[4], id) end
  redis.call('ZADD', p .. 'res:' .. ARGV[4], cur[2], id)
  redis.call('HSET', KEYS[1], 'resource', ARGV[4])
end
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[1], 'validBefore', ARGV[5])
  if state == 'reserved' or state == 'uncertain' then
    redis.call('ZADD', cur[3] == 'credits' and KEYS[3] or KEYS[2], ARGV[6], id)
  end
end
redis.call('HSET', KEYS[1], 'updatedAt', ARGV[3])
return 1
`;

/**
 * KEYS: entry, x402 holds, credits holds. ARGV: '+' to grow or '-' to give back, amount (unsigned), daily, monthly,
 * total limit ('' = none), now, seconds to move the end by, how long a hold without validBefore lasts (ms), id.
 * Returns {0, window, spent, createdAt} if growing would overflow a window of the entry's own, else {1}: the amount counted in
 * every window the entry counts in (a give-back never below zero), the entry's amount and end time moved.
 */
export const EXTEND = `${DECIMAL}
local cur = redis.call('HMGET', KEYS[1], 'state', 'amount', 'kd', 'km', 'kt', 'cd', 'cm', 'ct', 'kind', 'validBefore', 'createdAt')
local state = cur[1]
if not state then return redis.error_reply('TG_NOT_FOUND') end
if state ~= 'reserved' and state ~= 'uncertain' then return redis.error_reply('TG_ILLEGAL ' .. state) end
local grow, delta = ARGV[1] == '+', ARGV[2]
if not grow and gt(delta, cur[2]) then delta = cur[2] end
if grow then
  for w = 1, 3 do
    local spent = over(cur[2 + w], ARGV[2 + w], delta)
    if spent then return {0, w, spent, cur[11]} end
  end
end
for k = 3, 8 do
  if cur[k] and redis.call('EXISTS', cur[k]) == 1 then
    if grow then redis.call('INCRBY', cur[k], delta) else redis.call('DECRBY', cur[k], delta) end
  end
end
local amount = grow and add(cur[2], delta) or sub(cur[2], delta)
local ends = cur[10] and tonumber(cur[10]) or math.floor((tonumber(cur[11]) + tonumber(ARGV[8])) / 1000)
ends = ends + tonumber(ARGV[7])
redis.call('HSET', KEYS[1], 'amount', amount, 'validBefore', string.format('%d', ends), 'updatedAt', ARGV[6])
redis.call('ZADD', cur[9] == 'credits' and KEYS[3] or KEYS[2], ends * 1000, ARGV[9])
return {1}
`;
