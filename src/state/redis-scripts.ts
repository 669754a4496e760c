// Lua scripts that make each Redis state operation atomic. Redis runs a script alone, so a check and the writes that
// depend on it cannot interleave with another instance's. Keys not known before the script reads the entry (the
// index sets of its state, a previous owner's sets) are built inside the script from the prefix: this backend
// targets a single Redis primary (or a replicated/Sentinel one), not Redis Cluster.

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
`;

/**
 * KEYS: entry, daily, monthly, total, seq, idx all/tenant, idx reserved/tenant, idx all/global, idx reserved/global, holds
 * ARGV: amount, daily limit, monthly limit, total limit ('' = none), hold expiry, day ttl, month ttl, id, field/value…
 * Returns {2} if the id exists (a retry), {0, window, spent} if a window would overflow, {1} once counted everywhere.
 */
export const RESERVE = `${DECIMAL}
if redis.call('EXISTS', KEYS[1]) == 1 then return {2} end
local amount = ARGV[1]
for w = 1, 3 do
  local limit = ARGV[1 + w]
  if limit ~= '' then
    local spent = redis.call('GET', KEYS[1 + w]) or '0'
    local counted = spent
    if counted:sub(1, 1) == '-' then counted = '0' end
    if gt(add(counted, amount), limit) then return {0, w, spent} end
  end
end
redis.call('INCRBY', KEYS[2], amount)
redis.call('PEXPIRE', KEYS[2], ARGV[6])
redis.call('INCRBY', KEYS[3], amount)
redis.call('PEXPIRE', KEYS[3], ARGV[7])
redis.call('INCRBY', KEYS[4], amount)
local seq = redis.call('INCR', KEYS[5])
local id = ARGV[8]
redis.call('HSET', KEYS[1], 'seq', seq, 'kd', KEYS[2], 'km', KEYS[3], 'kt', KEYS[4], unpack(ARGV, 9))
for k = 6, 9 do redis.call('ZADD', KEYS[k], seq, id) end
redis.call('ZADD', KEYS[10], ARGV[5], id)
return {1}
`;

/**
 * KEYS: entry, holds. ARGV: prefix, to, now, id, field/value…
 * Moves the entry to `to`, returning its amount to the windows it was counted in when it leaves a counted state.
 */
export const TRANSITION = `
local cur = redis.call('HMGET', KEYS[1], 'state', 'tenant', 'seq', 'amount', 'kd', 'km', 'kt')
local state, to = cur[1], ARGV[2]
if not state then return redis.error_reply('TG_NOT_FOUND') end
if state == 'committed' or state == 'released' then
  if state == to then return 0 end
  return redis.error_reply('TG_ILLEGAL ' .. state)
end
local counted = { reserved = true, uncertain = true, committed = true }
if counted[state] and not counted[to] then
  for k = 5, 7 do
    if redis.call('EXISTS', cur[k]) == 1 then redis.call('DECRBY', cur[k], cur[4]) end
  end
end
local p, tenant, id = ARGV[1], cur[2], ARGV[4]
if state ~= to then
  redis.call('ZREM', p .. 'ledger:idx:' .. state .. ':t:' .. tenant, id)
  redis.call('ZREM', p .. 'ledger:idx:' .. state .. ':g', id)
  redis.call('ZADD', p .. 'ledger:idx:' .. to .. ':t:' .. tenant, cur[3], id)
  redis.call('ZADD', p .. 'ledger:idx:' .. to .. ':g', cur[3], id)
end
if to ~= 'reserved' and to ~= 'uncertain' then redis.call('ZREM', KEYS[2], id) end
redis.call('HSET', KEYS[1], 'state', to, 'updatedAt', ARGV[3], unpack(ARGV, 5))
return 1
`;

/** KEYS: entry, holds. ARGV: id, now, nonce, validBefore, payer, hold expiry (ms). */
export const SIGNED = `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return redis.error_reply('TG_NOT_FOUND') end
redis.call('HSET', KEYS[1], 'nonce', ARGV[3], 'validBefore', ARGV[4], 'payer', ARGV[5], 'updatedAt', ARGV[2])
if state == 'reserved' or state == 'uncertain' then redis.call('ZADD', KEYS[2], ARGV[6], ARGV[1]) end
return 1
`;

/** KEYS: owner hash, seq. ARGV: prefix, kind, id, tenant. A claim makes the resource its tenant's newest, active. */
export const CLAIM = `
local p, kind, id, tenant = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local old = redis.call('HGET', KEYS[1], 'tenant')
if old and old ~= tenant then
  redis.call('ZREM', p .. 'own:list:' .. kind .. ':t:' .. old, id)
  redis.call('SREM', p .. 'own:active:' .. kind .. ':t:' .. old, id)
end
local seq = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'tenant', tenant, 'active', '1')
redis.call('ZADD', p .. 'own:list:' .. kind .. ':t:' .. tenant, seq, id)
redis.call('SADD', p .. 'own:active:' .. kind .. ':t:' .. tenant, id)
return 1
`;

/** KEYS: owner hash. ARGV: prefix, kind, id, '1' | '0'. Unknown resources are left alone. */
export const SET_ACTIVE = `
local tenant = redis.call('HGET', KEYS[1], 'tenant')
if not tenant then return 0 end
local set = ARGV[1] .. 'own:active:' .. ARGV[2] .. ':t:' .. tenant
redis.call('HSET', KEYS[1], 'active', ARGV[4])
if ARGV[4] == '1' then redis.call('SADD', set, ARGV[3]) else redis.call('SREM', set, ARGV[3]) end
return 1
`;

/** KEYS: counter. ARGV: by, ttl ms. The ttl is set only when the counter is created. */
export const INCR_BY = `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return n
`;

/** KEYS: key. ARGV: pending marker, lease ms. Returns the current value, or nil once the key was claimed. */
export const BEGIN = `
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
`;

/**
 * KEYS: records hash, sources hash, bodies hash, version. ARGV: mode ('put' | 'create' | 'seed'), id, record JSON,
 * source ('config' | 'api' | 'deleted'), tenant JSON. Returns 1 when written (and the version bumped), else 0.
 */
export const TENANT_WRITE = `
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
export const AUDIT_APPEND = `
local seq = redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[2], seq, seq .. '|' .. ARGV[1])
return seq
`;

export const SCRIPTS = {
  tgReserve: { numberOfKeys: 10, lua: RESERVE },
  tgTransition: { numberOfKeys: 2, lua: TRANSITION },
  tgSigned: { numberOfKeys: 2, lua: SIGNED },
  tgClaim: { numberOfKeys: 2, lua: CLAIM },
  tgSetActive: { numberOfKeys: 1, lua: SET_ACTIVE },
  tgIncrBy: { numberOfKeys: 1, lua: INCR_BY },
  tgBegin: { numberOfKeys: 1, lua: BEGIN },
  tgTenantWrite: { numberOfKeys: 4, lua: TENANT_WRITE },
  tgAuditAppend: { numberOfKeys: 2, lua: AUDIT_APPEND },
} as const;

type ScriptName = keyof typeof SCRIPTS;
/** The custom commands defineCommand adds to a client. */
export type ScriptCommands = { [K in ScriptName]: (...keysThenArgs: (string | number)[]) => Promise<unknown> };
