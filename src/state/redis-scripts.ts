// Lua scripts that make each Redis state operation atomic. Redis runs a script alone, so a check and the writes that
// depend on it cannot interleave with another instance's. Keys not known before the script reads the entry (the
// index sets of its state, a previous owner's sets) are built inside the script from a key prefix the caller passes
// (RedisConnection.key of the group): in a Redis Cluster that prefix carries the group's hash tag, so those keys sit
// on the same slot as the declared ones.

/** Exact comparison of non-negative decimal strings: amounts are bigint, Lua numbers are doubles. */
const DECIMAL = `
local function add(a, b)
  local r, carry, i, j = {}, 0, #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local s = carry + (i > 0 and tonumber(a:sub(i, i)) or 0) + (j > 0 and tonumber(b:sub(j, j)) or 0)
    table.insert(r, 1, s % 10)
    carry = math.floor(s / 10)
    i = i - 1
    j = j - 1
  end
  local out = (table.concat(r):gsub('^0+', ''))
  if out == '' then return '0' end
  return out
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
  local out = (table.concat(r):gsub('^0+', ''))
  if out == '' then return '0' end
  return out
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
const RESERVE = `${DECIMAL}
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
 * KEYS: entry, x402 holds, credits holds. ARGV: index key prefix, to, now, id, final amount ('' = the reserved one), field/value…
 * Moves the entry to `to`, returning its amount to the windows it was counted in when it leaves a counted state, and
 * on a commit for less than was reserved returning the difference (a credits commit for more counts the difference).
 */
const TRANSITION = `${DECIMAL}
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
  redis.call('ZREM', p .. state .. ':g', id)
  redis.call('ZADD', p .. to .. ':t:' .. tenant, cur[3], id)
  redis.call('ZADD', p .. to .. ':g', cur[3], id)
end
if to ~= 'reserved' and to ~= 'uncertain' then redis.call('ZREM', cur[11] == 'credits' and KEYS[3] or KEYS[2], id) end
redis.call('HSET', KEYS[1], 'state', to, 'updatedAt', ARGV[3], unpack(ARGV, 6))
return 1
`;

/**
 * KEYS: entry. ARGV: final amount, now, field/value… A committed credits entry settled again: the difference to its
 * amount counted (or given back) in every window it counts in. Returns the difference as a signed decimal string.
 */
const RESETTLE = `${DECIMAL}
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

/** KEYS: entry, x402 holds, credits holds. ARGV: id, now, nonce, validBefore, payer, hold expiry (ms). */
const SIGNED = `
local cur = redis.call('HMGET', KEYS[1], 'state', 'kind')
local state = cur[1]
if not state then return redis.error_reply('TG_NOT_FOUND') end
redis.call('HSET', KEYS[1], 'nonce', ARGV[3], 'validBefore', ARGV[4], 'payer', ARGV[5], 'updatedAt', ARGV[2])
local holds = cur[2] == 'credits' and KEYS[3] or KEYS[2]
if state == 'reserved' or state == 'uncertain' then redis.call('ZADD', holds, ARGV[6], ARGV[1]) end
return 1
`;

/**
 * KEYS: entry, x402 holds, credits holds. ARGV: index key prefix, id, now, resource ('' = unchanged), validBefore ('' =
 * unchanged), hold expiry (ms). Moves the entry to its resource's index, and its hold to the new end time.
 */
const ATTACH = `
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
const EXTEND = `${DECIMAL}
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

/**
 * KEYS: owner hash, seq, ended set. ARGV: ownership key prefix, kind, id, tenant. A claim makes the resource its
 * tenant's newest, active (and no longer ended); one another tenant owns is left as it is (0).
 */
const CLAIM = `
local p, kind, id, tenant = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local old = redis.call('HGET', KEYS[1], 'tenant')
if old and old ~= tenant then return 0 end
local seq = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'tenant', tenant, 'active', '1')
redis.call('PERSIST', KEYS[1])
redis.call('ZREM', KEYS[3], kind .. ':' .. id)
redis.call('ZADD', p .. 'list:' .. kind .. ':t:' .. tenant, seq, id)
redis.call('SADD', p .. 'active:' .. kind .. ':t:' .. tenant, id)
return 1
`;

/**
 * KEYS: owner hash, ended set. ARGV: ownership key prefix, kind, id, '1' | '0', retention ms, now ms. Unknown
 * resources are left alone; a change forgets the last known status. An ended resource's record expires after the
 * retention (PEXPIRE on its hash); the ended
 * set, scored by when and named "<kind>:<tenant>:<id>", lets a later pass drop it from its tenant's list.
 */
const SET_ACTIVE = `
local tenant = redis.call('HGET', KEYS[1], 'tenant')
if not tenant then return 0 end
local kind, id = ARGV[2], ARGV[3]
local member = kind .. ':' .. tenant .. ':' .. id
if redis.call('HGET', KEYS[1], 'active') ~= ARGV[4] then redis.call('HDEL', KEYS[1], 'status') end
redis.call('HSET', KEYS[1], 'active', ARGV[4])
if ARGV[4] == '1' then
  redis.call('SADD', ARGV[1] .. 'active:' .. kind .. ':t:' .. tenant, id)
  redis.call('PERSIST', KEYS[1])
  redis.call('ZREM', KEYS[2], member)
else
  redis.call('SREM', ARGV[1] .. 'active:' .. kind .. ':t:' .. tenant, id)
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  redis.call('ZADD', KEYS[2], tonumber(ARGV[6]) + tonumber(ARGV[5]), member)
end
return 1
`;

/**
 * KEYS: ended set. ARGV: ownership key prefix, now ms, batch. Drops up to `batch` ended resources whose retention
 * has passed from their tenant's list (their record expired on its own). Returns how many.
 */
const PRUNE_ENDED = `
local p = ARGV[1]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local n = 0
for _, member in ipairs(due) do
  local a = string.find(member, ':', 1, true)
  local b = string.find(member, ':', a + 1, true)
  local k, tenant, id = string.sub(member, 1, a - 1), string.sub(member, a + 1, b - 1), string.sub(member, b + 1)
  local h = p .. k .. ':' .. id
  if redis.call('HGET', h, 'active') ~= '1' then
    redis.call('DEL', h)
    redis.call('ZREM', p .. 'list:' .. k .. ':t:' .. tenant, id)
    n = n + 1
  end
  redis.call('ZREM', KEYS[1], member)
end
return n
`;

/** KEYS: owner hash. ARGV: status. Unknown (or expired) resources are left alone. */
const NOTE_STATUS = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
return 1
`;

/** KEYS: counter. ARGV: by, ttl ms. The ttl is set only when the counter is created. */
const INCR_BY = `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return n
`;

/** KEYS: key. ARGV: pending marker, lease ms. Returns the current value, or nil once the key was claimed. */
const BEGIN = `
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
`;

/**
 * KEYS: records hash, sources hash, bodies hash, version. ARGV: mode ('put' | 'create' | 'seed'), id, record JSON,
 * source ('config' | 'api' | 'deleted'), tenant JSON. Returns 1 when written (and the version bumped), else 0.
 */
const TENANT_WRITE = `
local mode, id = ARGV[1], ARGV[2]
local src = redis.call('HGET', KEYS[2], id)
if mode == 'create' and src then return 0 end
if mode == 'seed' and src then
  if src ~= 'config' then return 0 end
  if redis.call('HGET', KEYS[3], id) == ARGV[5] then return 0 end
end
redis.call('HSET', KEYS[1], id, ARGV[3])
redis.call('HSET', KEYS[2], id, ARGV[4])
redis.call('HSET', KEYS[3], id, ARGV[5])
redis.call('INCR', KEYS[4])
return 1
`;

/** KEYS: sequence, entries sorted set. ARGV: entry JSON without its seq. Returns the seq it was stored under. */
const AUDIT_APPEND = `
local seq = redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[2], seq, seq .. '|' .. ARGV[1])
return seq
`;

/** KEYS: messages hash, due sorted set. ARGV: id, message JSON, nextAt. Returns 1 if added, 0 if already waiting. */
const OUTBOX_ENQUEUE = `
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
`;

/**
 * KEYS: messages hash, due sorted set, owners hash. ARGV: owner, now, lease ms, limit. Moves each due message's due
 * time to the end of the lease and records its owner; returns the messages' JSON (with nextAt as claimed).
 */
const OUTBOX_CLAIM = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[4]))
local out, lease_end = {}, tonumber(ARGV[2]) + tonumber(ARGV[3])
for _, id in ipairs(ids) do
  local raw = redis.call('HGET', KEYS[1], id)
  if raw then
    local m = cjson.decode(raw)
    m.nextAt = lease_end
    raw = cjson.encode(m)
    redis.call('HSET', KEYS[1], id, raw)
    redis.call('ZADD', KEYS[2], lease_end, id)
    redis.call('HSET', KEYS[3], id, ARGV[1])
    table.insert(out, raw)
  else
    redis.call('ZREM', KEYS[2], id)
  end
end
return out
`;

/**
 * KEYS: messages hash, due sorted set, owners hash, dead list. ARGV: id, owner, mode (ack|retry|bury), nextAt, error.
 * Returns 0 unless the owner still holds the claim.
 */
const OUTBOX_SETTLE = `
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
if ARGV[3] == 'ack' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 1
end
local m = cjson.decode(redis.call('HGET', KEYS[1], ARGV[1]))
m.attempts = m.attempts + 1
m.lastError = ARGV[5]
if ARGV[3] == 'retry' then
  m.nextAt = tonumber(ARGV[4])
  redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(m))
  redis.call('ZADD', KEYS[2], m.nextAt, ARGV[1])
else
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('LPUSH', KEYS[4], cjson.encode(m))
  redis.call('LTRIM', KEYS[4], 0, 999)
end
return 1
`;

export const SCRIPTS = {
  tgReserve: { numberOfKeys: 16, lua: RESERVE },
  tgTransition: { numberOfKeys: 3, lua: TRANSITION },
  tgResettle: { numberOfKeys: 1, lua: RESETTLE },
  tgSigned: { numberOfKeys: 3, lua: SIGNED },
  tgAttach: { numberOfKeys: 3, lua: ATTACH },
  tgExtend: { numberOfKeys: 3, lua: EXTEND },
  tgClaim: { numberOfKeys: 3, lua: CLAIM },
  tgSetActive: { numberOfKeys: 2, lua: SET_ACTIVE },
  tgPruneEnded: { numberOfKeys: 1, lua: PRUNE_ENDED },
  tgNoteStatus: { numberOfKeys: 1, lua: NOTE_STATUS },
  tgIncrBy: { numberOfKeys: 1, lua: INCR_BY },
  tgBegin: { numberOfKeys: 1, lua: BEGIN },
  tgTenantWrite: { numberOfKeys: 4, lua: TENANT_WRITE },
  tgAuditAppend: { numberOfKeys: 2, lua: AUDIT_APPEND },
  tgOutboxEnqueue: { numberOfKeys: 2, lua: OUTBOX_ENQUEUE },
  tgOutboxClaim: { numberOfKeys: 3, lua: OUTBOX_CLAIM },
  tgOutboxSettle: { numberOfKeys: 4, lua: OUTBOX_SETTLE },
} as const;

type ScriptName = keyof typeof SCRIPTS;
/** The custom commands defineCommand adds to a client. */
export type ScriptCommands = { [K in ScriptName]: (...keysThenArgs: (string | number)[]) => Promise<unknown> };
