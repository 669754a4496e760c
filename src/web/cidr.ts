// A small CIDR matcher (IPv4 and IPv6, IPv4-mapped IPv6 folded to IPv4) for the trusted-proxy list.

/** 32-bit IPv4 as bigint, or undefined. */
export function parseIPv4(s: string): bigint | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (!m) return undefined;
  let n = 0n;
  for (const part of m.slice(1)) {
    if (part.length > 1 && part.startsWith("0")) return undefined;
    const v = Number(part);
    if (v > 255) return undefined;
    n = (n << 8n) | BigInt(v);
  }
  return n;
}

/** 128-bit IPv6 as bigint (zone id dropped, embedded IPv4 allowed), or undefined. */
function parseIPv6(s: string): bigint | undefined {
  s = s.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (!s.includes(":")) return undefined;
  let tail: bigint | undefined;
  const v4 = /:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(s);
  if (v4) {
    tail = parseIPv4(v4[1]!);
    if (tail === undefined) return undefined;
    s = s.slice(0, v4.index + 1) + "0:0";
  }
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(":") : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...rest];
  let n = 0n;
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    n = (n << 16n) | BigInt(parseInt(g, 16));
  }
  if (tail !== undefined) n = (n & ~0xffffffffn) | tail;
  return n;
}

/** An address as [bits, width]; IPv4-mapped IPv6 (`::ffff:10.0.0.1`, how Node reports IPv4 peers on `::`) as IPv4. */
export function parseAddress(s: string): [bigint, 32 | 128] | undefined {
  const v4 = parseIPv4(s);
  if (v4 !== undefined) return [v4, 32];
  const v6 = parseIPv6(s);
  if (v6 === undefined) return undefined;
  if (v6 >> 32n === 0xffffn) return [v6 & 0xffffffffn, 32];
  return [v6, 128];
}

interface Range {
  width: 32 | 128;
  base: bigint;
  mask: bigint;
}

function parseRange(cidr: string): Range | undefined {
  const [addr, bits, extra] = cidr.trim().split("/");
  if (extra !== undefined || !addr) return undefined;
  const a = parseAddress(addr);
  if (!a) return undefined;
  const [base, width] = a;
  let prefix = bits === undefined ? width : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  // `::ffff:10.0.0.0/104` is the IPv4 range 10.0.0.0/8.
  if (width === 32 && parseIPv4(addr) === undefined) prefix -= 96;
  if (!(prefix >= 0 && prefix <= width)) return undefined;
  const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(width - prefix);
  return { width, base: base & mask, mask };
}

/** Whether a string is an address or CIDR range this matcher understands (for config validation). */
export function isCidr(s: string): boolean {
  return parseRange(s) !== undefined;
}

/**
 * A predicate over peer addresses for a list of CIDRs (a bare address is its own /32 or /128).
 * @example cidrMatcher(["10.0.0.0/8", "::1"])("::ffff:10.1.2.3") // true
 */
export function cidrMatcher(cidrs: readonly string[]): (address: string | undefined) => boolean {
  const ranges = cidrs.map((c) => {
    const r = parseRange(c);
    if (!r) throw new TypeError(`not an address or CIDR range: ${c}`);
    return r;
  });
  if (ranges.length === 0) return () => false;
  return (address) => {
    const a = address ? parseAddress(address) : undefined;
    if (!a) return false;
    return ranges.some((r) => r.width === a[1] && (a[0] & r.mask) === r.base);
  };
}

/**
 * The IPv4 address an IPv6 address stands for, where its form only wraps one: IPv4-mapped (`::ffff:a.b.c.d`),
 * IPv4-compatible (`::a.b.c.d`, deprecated; `::` and `::1` excluded) and IPv4-translated (`::ffff:0:a.b.c.d`), dotted;
 * undefined for any other address (and for IPv4 itself). `[::7f00:1]` and `[::127.0.0.1]` are 127.0.0.1.
 */
export function wrappedIPv4(address: string): string | undefined {
  const v6 = parseIPv6(address);
  if (v6 === undefined) return undefined;
  const high = v6 >> 32n;
  const wrapped = high === 0xffffn || high === 0xffff0000n || (high === 0n && v6 > 1n);
  if (!wrapped) return undefined;
  const v4 = v6 & 0xffffffffn;
  return [24n, 16n, 8n, 0n].map((s) => String((v4 >> s) & 0xffn)).join(".");
}
