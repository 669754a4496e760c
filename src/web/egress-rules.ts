// Egress rules: entries of `allowOut` / `denyOut` in sandbox and session bodies and a sandbox's network update, and of
// the egress floors of agent policies in the config. Each is an address, a CIDR range or a host name. The gateway's
// floor (middleware/body-check/policy.ts) and the upstream must read an entry the same way, so an entry is kept and
// forwarded in one canonical spelling, and one that is not plainly one of the three is refused: `203.0.113.0/024` is
// written `203.0.113.0/24`; `0.0.0.0/0.allowed.example`, which a floor would read as a host under allowed.example and
// an upstream might read as every address, is refused.
import { parseAddress, parseIPv4 } from "./cidr.js";

const IPV4_SHIFTS = [24n, 16n, 8n, 0n];

function formatIPv4(n: bigint): string {
  return IPV4_SHIFTS.map((s) => String((n >> s) & 0xffn)).join(".");
}

/** RFC 5952: lower-case hex, no leading zeros, the longest run of two or more zero groups (the first of equals) as `::`. */
function formatIPv6(n: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((n >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.len < 2) return hex.join(":");
  return `${hex.slice(0, best.at).join(":")}::${hex.slice(best.at + best.len).join(":")}`;
}

/**
 * An address or CIDR range in canonical form (`10.0.0.0/8`, `2001:db8::/32`, `192.0.2.7`): the prefix in plain
 * decimal, host bits cleared, IPv6 compressed (RFC 5952), an IPv4-mapped IPv6 range folded to IPv4. Undefined when `s`
 * is not exactly one (a zone id, a prefix out of range or not in digits, an octet with a leading zero).
 */
export function canonicalCidr(s: string): string | undefined {
  const parts = s.split("/");
  if (parts.length > 2 || !parts[0] || s.includes("%")) return undefined;
  const [addr, bits] = parts as [string, string | undefined];
  if (bits !== undefined && !/^\d{1,3}$/.test(bits)) return undefined;
  const a = parseAddress(addr);
  if (!a) return undefined;
  const [value, width] = a;
  if (bits === undefined) return width === 32 ? formatIPv4(value) : formatIPv6(value);
  let prefix = Number(bits);
  // `::ffff:10.0.0.0/104` is the IPv4 range 10.0.0.0/8.
  if (width === 32 && parseIPv4(addr) === undefined) prefix -= 96;
  if (!(prefix >= 0 && prefix <= width)) return undefined;
  const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(width - prefix);
  const base = value & mask;
  return `${width === 32 ? formatIPv4(base) : formatIPv6(base)}/${prefix}`;
}

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

/** A host rule in canonical form (lower case, IDN as punycode, no trailing dot; `*.` kept), or undefined. */
function canonicalHost(s: string): string | undefined {
  const wildcard = s.startsWith("*.");
  const name = (wildcard ? s.slice(2) : s).replace(/\.$/, "");
  // Only a name: no scheme, port, path, credentials, brackets or spaces.
  if (!name || /[/\\?#@:[\]\s%*]/.test(name)) return undefined;
  let host: string;
  try {
    host = new URL(`http://${name}/`).hostname;
  } catch {
    return undefined;
  }
  // A name URL parsing reads as an address (`1.2.3`, `0x7f.1`) is an address spelled ambiguously: refused.
  if (canonicalCidr(host) !== undefined || /^[\d.]+$/.test(host)) return undefined;
  const labels = host.split(".");
  if (host.length > 253 || !labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels.at(-1)!)) return undefined;
  return wildcard ? `*.${host}` : host;
}

/**
 * An egress rule in the one spelling the gateway forwards, or undefined when it is not plainly an address, a CIDR
 * range, a host name (`*.` for its subdomains) or `*`. Surrounding white space is dropped.
 */
export function canonicalEgressRule(rule: string): string | undefined {
  const s = rule.trim();
  if (s === "*") return s;
  const cidr = canonicalCidr(s);
  if (cidr !== undefined) return cidr;
  // What has the look of an address or range and is not a valid one is never read as a host name.
  if (s.includes("/") || /^[\d.]+$/.test(s) || (s.includes(":") && !s.includes("."))) return undefined;
  return canonicalHost(s.toLowerCase());
}
