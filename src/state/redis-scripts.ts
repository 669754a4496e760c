// Lua scripts that make each Redis state operation atomic. Redis runs a script alone, so a check and the writes that
// depend on it cannot interleave with another instance's. Keys not known before the script reads the entry (the
// index sets of its state, a previous owner's sets) are built inside the script from a key prefix the caller passes
// (RedisConnection.key of the group): in a Redis Cluster that prefix carries the group's hash tag, so those keys sit
// on the same slot as the declared ones.
import { ATTACH, EXTEND, RESERVE, RESETTLE, TRANSITION } from "./redis-ledger-scripts.js";
import {
  OWN_CLAIM,
  OWN_CLAIM_TENANT,
  OWN_CLAIM_TENANT_WITHIN,
  OWN_PRUNE_TENANT,
  OWN_SET_ACTIVE,
  OWN_SET_ACTIVE_TENANT,
  OWN_UNCLAIM_TENANT,
} from "./redis-ownership-scripts.js";

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
 * CLAIM counted against a limit (ARGV[5]) of the tenant's live resources of the kind, in the same step. Returns
 * { 1 claimed | 0 another tenant's | -1 full, the tenant's live count after }.
 */
const CLAIM_WITHIN = `
local p, kind, id, tenant, limit = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local live = p .. 'active:' .. kind .. ':t:' .. tenant
local old = redis.call('HGET', KEYS[1], 'tenant')
if old and old ~= tenant then return { 0, redis.call('SCARD', live) } end
if redis.call('SISMEMBER', live, id) == 0 then
  local n = redis.call('SCARD', live)
  if n >= limit then return { -1, n } end
end
local seq = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'tenant', tenant, 'active', '1')
redis.call('PERSIST', KEYS[1])
redis.call('ZREM', KEYS[3], kind .. ':' .. id)
redis.call('ZADD', p .. 'list:' .. kind .. ':t:' .. tenant, seq, id)
redis.call('SADD', live, id)
return { 1, redis.call('SCARD', live) }
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

/**
 * KEYS: any key of the group (pins the slot). ARGV: key prefix, now ms, hold, hold expiry ms, set ttl ms, then per
 * candidate "<pool>:<account>" and its limit ('' = none). Returns the 1-based index of the candidate held (0: none),
 * then each candidate's count before the hold.
 */
const ACCOUNT_TAKE = `
local p, now, hold, exp, keep = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local out = {0}
for i = 6, #ARGV, 2 do
  local k = p .. ARGV[i]
  redis.call('ZREMRANGEBYSCORE', k, '-inf', now)
  local n = redis.call('ZCARD', k)
  out[#out + 1] = n
  if out[1] == 0 and (ARGV[i + 1] == '' or n < tonumber(ARGV[i + 1])) then
    redis.call('ZADD', k, exp, hold)
    redis.call('PEXPIRE', k, keep)
    out[1] = (i - 4) / 2
  end
end
return out
`;

export const SCRIPTS = {
  // The ledger's (./redis-ledger-scripts.ts)
  tgReserve: { numberOfKeys: 16, lua: RESERVE },
  tgTransition: { numberOfKeys: 3, lua: TRANSITION },
  tgResettle: { numberOfKeys: 1, lua: RESETTLE },
  tgAttach: { numberOfKeys: 3, lua: ATTACH },
  tgExtend: { numberOfKeys: 3, lua: EXTEND },
  // Ownership, counters, tenants, the audit log and the outbox
  tgClaim: { numberOfKeys: 3, lua: CLAIM },
  tgClaimWithin: { numberOfKeys: 3, lua: CLAIM_WITHIN },
  tgSetActive: { numberOfKeys: 2, lua: SET_ACTIVE },
  tgPruneEnded: { numberOfKeys: 1, lua: PRUNE_ENDED },
  tgNoteStatus: { numberOfKeys: 1, lua: NOTE_STATUS },
  // Ownership in the tenant layout (./redis-ownership-scripts.ts)
  tgOwnClaim: { numberOfKeys: 1, lua: OWN_CLAIM },
  tgOwnClaimTenant: { numberOfKeys: 4, lua: OWN_CLAIM_TENANT },
  tgOwnClaimTenantWithin: { numberOfKeys: 4, lua: OWN_CLAIM_TENANT_WITHIN },
  tgOwnUnclaimTenant: { numberOfKeys: 2, lua: OWN_UNCLAIM_TENANT },
  tgOwnSetActive: { numberOfKeys: 1, lua: OWN_SET_ACTIVE },
  tgOwnSetActiveTenant: { numberOfKeys: 2, lua: OWN_SET_ACTIVE_TENANT },
  tgOwnPruneTenant: { numberOfKeys: 1, lua: OWN_PRUNE_TENANT },
  tgIncrBy: { numberOfKeys: 1, lua: INCR_BY },
  tgBegin: { numberOfKeys: 1, lua: BEGIN },
  tgTenantWrite: { numberOfKeys: 4, lua: TENANT_WRITE },
  tgAuditAppend: { numberOfKeys: 2, lua: AUDIT_APPEND },
  tgOutboxEnqueue: { numberOfKeys: 2, lua: OUTBOX_ENQUEUE },
  tgOutboxClaim: { numberOfKeys: 3, lua: OUTBOX_CLAIM },
  tgOutboxSettle: { numberOfKeys: 4, lua: OUTBOX_SETTLE },
  // Live resources per upstream account
  tgAccountTake: { numberOfKeys: 1, lua: ACCOUNT_TAKE },
} as const;

type ScriptName = keyof typeof SCRIPTS;
/** The custom commands defineCommand adds to a client. */
export type ScriptCommands = { [K in ScriptName]: (...keysThenArgs: (string | number)[]) => Promise<unknown> };
