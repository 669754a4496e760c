// Where alert webhooks may be sent: https (http only where the operator allows it), and never to loopback, link-local
// (cloud metadata), private, shared (CGNAT), multicast or reserved addresses unless an operator allowlists a CIDR.
// Checked on the URL at config time (an IP literal, a local-only name) and again at delivery on every address the
// name resolves to (src/host/node/webhook-sender.ts connects to the address it checked; Workers refuse IP literals only).
// Both see the host through one normaliser (destinationHost): trailing dots dropped, and an IPv6 literal that only wraps
// an IPv4 address (`[::7f00:1]`, `[::127.0.0.1]`, `[::ffff:0:7f00:1]`) read as that IPv4 address.
import { cidrMatcher, wrappedIPv4 } from "./cidr.js";

/** Ranges no webhook reaches unless allowlisted (IPv4-mapped IPv6 is folded to IPv4 by the matcher). */
const BLOCKED = [
  "0.0.0.0/8", // "this network"
  "10.0.0.0/8", // private
  "100.64.0.0/10", // shared address space (CGNAT)
  "127.0.0.0/8", // loopback
  "169.254.0.0/16", // link-local, 169.254.169.254 (cloud metadata) included
  "172.16.0.0/12", // private
  "192.0.0.0/24", // IETF protocol assignments
  "192.0.2.0/24", // documentation
  "192.88.99.0/24", // 6to4 relay
  "192.168.0.0/16", // private
  "198.18.0.0/15", // benchmarking
  "198.51.100.0/24", // documentation
  "203.0.113.0/24", // documentation
  "224.0.0.0/4", // multicast
  "240.0.0.0/4", // reserved, broadcast
  "::/128", // unspecified
  "::1/128", // loopback
  "64:ff9b::/96", // NAT64: would reach any IPv4 address, private ones included
  "64:ff9b:1::/48", // local-use NAT64
  "100::/64", // discard
  "2001::/32", // Teredo: embeds IPv4 addresses
  "2001:db8::/32", // documentation
  "2002::/16", // 6to4: embeds any IPv4 address
  "fc00::/7", // unique local (fd00:ec2::254, the AWS metadata address, included)
  "fe80::/10", // link-local
  "ff00::/8", // multicast
];

/** Names that only ever mean this machine or a cloud's internal network. */
const LOCAL_NAME = /(^|\.)(localhost|local|internal|localdomain|home\.arpa)$/i;

export interface DestinationPolicy {
  /** Allow http: URLs (default: https only). */
  allowHttp: boolean;
  /** Addresses or CIDR ranges allowed although they are in a blocked range (a receiver on the operator's network). */
  allowCidrs: readonly string[];
}

const isBlocked = cidrMatcher(BLOCKED);

/**
 * A destination's host as every check sees it, at config time and at delivery: an IP literal (brackets dropped, an
 * IPv6 form that wraps an IPv4 address written as that address), or a name in lower case without trailing dots
 * (`localhost.` is `localhost`). `hostname` as the URL parser gives it (IPv4 in any notation already dotted).
 */
export function destinationHost(hostname: string): { ip: string } | { name: string } {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  if (h.includes(":")) return { ip: wrappedIPv4(h) ?? h };
  const name = h.replace(/\.+$/, "");
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(name)) return { ip: name };
  return { name };
}

/**
 * The problems of a tenant's own alert receivers (`alerts.webhooks`, `alerts.slack`), each named by its field: the
 * admin API refuses a tenant change that has any (400), as the config file does.
 */
export function receiverProblems(policy: DestinationPolicy, alerts: { webhooks?: string[]; slack?: string[] }) {
  const rules = new DestinationRules(policy);
  return (["webhooks", "slack"] as const).flatMap((list) =>
    (alerts[list] ?? []).flatMap((url, i) => {
      const problem = rules.urlProblem(url);
      return problem ? [{ field: `alerts.${list}.${i}`, problem: `webhook ${url} refused: ${problem}` }] : [];
    }),
  );
}

/** The checks for one policy, built once. */
export class DestinationRules {
  private readonly allowed: (address: string) => boolean;

  constructor(private readonly policy: DestinationPolicy) {
    this.allowed = cidrMatcher(policy.allowCidrs);
  }

  /** Why `address` (a resolved IP) may not be sent to, or undefined when it may. */
  addressProblem(resolved: string): string | undefined {
    const address = wrappedIPv4(resolved) ?? resolved;
    if (this.allowed(address)) return undefined;
    if (isBlocked(address))
      return `${address} is a loopback, link-local, private or reserved address (allowlist its range in alerts.allowCidrs to send there)`;
    return undefined;
  }

  /**
   * Why `url` may not be sent to (scheme, IP literal in a blocked range, a local-only name), or undefined. `names:
   * false` leaves host names to the resolved-address check (Node resolves them itself, src/host/node/destination-guard.ts).
   */
  urlProblem(url: string, opts: { names?: boolean } = {}): string | undefined {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return "not a URL";
    }
    if (u.protocol !== "https:" && u.protocol !== "http:") return `the ${u.protocol} scheme is not allowed (https only)`;
    if (u.protocol === "http:" && !this.policy.allowHttp) return "http is not allowed (use https, or set alerts.allowHttp)";
    if (u.username || u.password) return "credentials in the URL are not allowed";
    const host = destinationHost(u.hostname);
    if ("ip" in host) return this.addressProblem(host.ip);
    if (opts.names === false) return undefined;
    if (LOCAL_NAME.test(host.name) || !host.name.includes("."))
      return `${u.hostname} names a local host (use its address and allowlist it in alerts.allowCidrs)`;
    return undefined;
  }
}
