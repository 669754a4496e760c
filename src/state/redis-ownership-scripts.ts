// Lua scripts of the ownership registry in the tenant layout (./redis-ownership.ts). Two groups of keys, each script
// on one of them: a resource's own record (its owner, liveness and last status: one key, on its own slot) and the
// tenant's keys under "{t:<tenant>}" (its lists newest first, its live resources, its ended resources, its sequence).

/**
 * KEYS: the resource's record. ARGV: tenant. The first claim wins: a record another tenant owns is left as it is (0);
 * otherwise the record is the tenant's, live, kept without expiry (1).
 */
export const OWN_CLAIM = `
local old = redis.call('HGET', KEYS[1], 'tenant')
if old and old ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'tenant', ARGV[1], 'active', '1')
redis.call('PERSIST', KEYS[1])
return 1
`;

/**
 * KEYS: the tenant's sequence, ended set, list of the kind, live set of the kind. ARGV: kind, id. The claimed
 * resource becomes the tenant's newest, live and no longer ended. Returns its sequence.
 */
export const OWN_CLAIM_TENANT = `
local seq = redis.call('INCR', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1] .. ':' .. ARGV[2])
redis.call('ZADD', KEYS[3], seq, ARGV[2])
redis.call('SADD', KEYS[4], ARGV[2])
return seq
`;

/**
 * OWN_CLAIM_TENANT counted against a limit (ARGV[3]) of the tenant's live resources of the kind: nothing is written
 * when the live set holds `limit` others. Returns { sequence, or -1 when full; the live count after }.
 */
export const OWN_CLAIM_TENANT_WITHIN = `
if redis.call('SISMEMBER', KEYS[4], ARGV[2]) == 0 then
  local n = redis.call('SCARD', KEYS[4])
  if n >= tonumber(ARGV[3]) then return { -1, n } end
end
local seq = redis.call('INCR', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1] .. ':' .. ARGV[2])
redis.call('ZADD', KEYS[3], seq, ARGV[2])
redis.call('SADD', KEYS[4], ARGV[2])
return { seq, redis.call('SCARD', KEYS[4]) }
`;

/**
 * KEYS: the resource's record. ARGV: '1' | '0', retention ms. Unknown resources are left alone (nil). A change forgets
 * the last known status; an ended record expires after the retention. Returns { owner, 1 if the liveness changed }.
 */
export const OWN_SET_ACTIVE = `
local tenant = redis.call('HGET', KEYS[1], 'tenant')
if not tenant then return false end
local changed = 0
if redis.call('HGET', KEYS[1], 'active') ~= ARGV[1] then
  changed = 1
  redis.call('HDEL', KEYS[1], 'status')
end
redis.call('HSET', KEYS[1], 'active', ARGV[1])
if ARGV[1] == '1' then redis.call('PERSIST', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return { tenant, changed }
`;

/**
 * KEYS: the tenant's live set of the kind, its ended set. ARGV: "<kind>:<id>", id, '1' | '0', when the retention
 * ends (ms). Live: in the live set, not ended; ended: out of the live set, in the ended set scored by that time.
 */
export const OWN_SET_ACTIVE_TENANT = `
if ARGV[3] == '1' then
  redis.call('SADD', KEYS[1], ARGV[2])
  redis.call('ZREM', KEYS[2], ARGV[1])
else
  redis.call('SREM', KEYS[1], ARGV[2])
  redis.call('ZADD', KEYS[2], tonumber(ARGV[4]), ARGV[1])
end
return 1
`;

/**
 * KEYS: the tenant's ended set. ARGV: the tenant's ownership key prefix, now ms, batch. Drops up to `batch` ended
 * resources whose retention has passed from the tenant's lists (their records expired on their own), unless live
 * again. Returns how many.
 */
export const OWN_PRUNE_TENANT = `
local p = ARGV[1]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local n = 0
for _, member in ipairs(due) do
  local a = string.find(member, ':', 1, true)
  local kind, id = string.sub(member, 1, a - 1), string.sub(member, a + 1)
  if redis.call('SISMEMBER', p .. 'active:' .. kind, id) == 0 then
    redis.call('ZREM', p .. 'list:' .. kind, id)
    n = n + 1
  end
  redis.call('ZREM', KEYS[1], member)
end
return n
`;

/**
 * KEYS: the tenant's list of the kind, live set of the kind. ARGV: id. Takes back the tenant step of a claim whose
 * record another tenant won (both steps are sent at once).
 */
export const OWN_UNCLAIM_TENANT = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('SREM', KEYS[2], ARGV[1])
return 1
`;
