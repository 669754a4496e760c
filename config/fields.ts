// The configuration's field types shared by its parts (./schema.ts, ./tenant-schema.ts): amounts, dates, origins,
// addresses, hosts, networks, percentages, webhook URLs, each with the message a wrong value gets.
import * as z from "zod";
import { isCidr } from "../src/web/cidr.js";
import { canonicalEgressRule } from "../src/web/egress-rules.js";

/** A USD amount such as "5.00" or "0.005" (at most 6 decimals, the precision of USDC). */
export const usdAmount = z
  .string({ error: 'expected a USD amount like "5.00"' })
  .regex(/^\d{1,12}(\.\d{1,6})?$/, { error: 'expected a USD amount like "5.00"' });

export const isoDate = z
  .string({ error: 'expected an ISO-8601 date like "2027-01-31T00:00:00Z"' })
  .refine((s) => !Number.isNaN(Date.parse(s)), { error: 'expected an ISO-8601 date like "2027-01-31T00:00:00Z"' });

export const origin = z.string({ error: 'expected an origin like "https://gateway.example.com"' }).refine(
  (s) => {
    try {
      const u = new URL(s);
      return (u.protocol === "http:" || u.protocol === "https:") && (u.pathname === "/" || u.pathname === "");
    } catch {
      return false;
    }
  },
  { error: 'expected an origin like "https://gateway.example.com" (scheme and host, no path)' },
);

/** An address or CIDR range such as "10.0.0.0/8" or "::1". */
export const cidr = z
  .string({ error: 'expected an address or CIDR range like "10.0.0.0/8"' })
  .refine(isCidr, { error: 'expected an address or CIDR range like "10.0.0.0/8" or "::1"' });

const EGRESS_RULE_ERROR = 'expected an address, a CIDR range like "203.0.113.0/24" or a host name like "example.com" or "*.example.com"';

/**
 * An egress rule (an egress floor's allowOut / denyOut entry), kept in its canonical spelling (../src/web/egress-rules.ts):
 * the floor and the bodies it is compared with are read the same way.
 */
export const egressRule = z
  .string({ error: EGRESS_RULE_ERROR })
  .max(4096)
  .refine((s) => canonicalEgressRule(s) !== undefined, { error: EGRESS_RULE_ERROR })
  .overwrite((s) => canonicalEgressRule(s) ?? s);

/** A host name with an optional port, as clients put it in Host: "gateway.example.com", "localhost:8787", "[::1]". */
export const hostName = z.string({ error: 'expected a host like "gateway.example.com" or "localhost:8787"' }).refine(
  (s) => {
    try {
      // A bare host with an optional port (a default one such as :80 included): nothing the URL parser would change.
      const [, name, port] = /^(.*?)(?::(\d{1,5}))?$/.exec(s.toLowerCase())!;
      return new URL(`http://${s}`).hostname === name && (port === undefined || Number(port) <= 65535);
    } catch {
      return false;
    }
  },
  { error: 'expected a host like "gateway.example.com" or "localhost:8787" (no scheme, no path)' },
);

export const caip2 = z.string().regex(/^[a-z0-9-]+:[A-Za-z0-9-]+$/, { error: 'expected a CAIP-2 network like "eip155:8453"' });
export const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, { error: "expected a 0x-prefixed 20-byte hex address" });

export const percent = z
  .number({ error: "expected a percentage like 80" })
  .min(1, { error: "expected a percentage from 1 to 100" })
  .max(100, { error: "expected a percentage from 1 to 100" });
export const webhookUrl = z
  .string({ error: 'expected a webhook URL like "https://ops.example.com/tollgate"' })
  .refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), {
    error: 'expected an https URL like "https://ops.example.com/tollgate"',
  });

export const windowSeconds = z.number({ error: "expected a number of seconds" }).int().min(10).max(86_400);

/**
 * A remote signer (`tollgate signer serve`, docs/signers.md): a Unix socket, or an https URL reached with mutual TLS.
 * The examples name the socket and URL shown in the messages (the gateway's signer, an account's).
 */
export const remoteSigner = (example: { socket: string; url: string }) =>
  z
    .strictObject({
      /** The Unix socket `tollgate signer serve --socket` listens on. */
      socket: z
        .string({ error: `expected the signer's socket path, e.g. "${example.socket}"` })
        .min(1)
        .optional(),
      /** Or its https URL (`tollgate signer serve --listen`), reached with mutual TLS: `ca`, `cert` and `key` below. */
      url: z.url({ protocol: /^https$/, error: `expected the signer's https URL, e.g. "${example.url}"` }).optional(),
      /** PEM file of the CA the signer's certificate comes from (and the gateway's, on the signer's side). */
      ca: z.string().min(1).optional(),
      /** PEM files of the gateway's client certificate and its private key (TLS only: no wallet key material). */
      cert: z.string().min(1).optional(),
      key: z.string().min(1).optional(),
    })
    .refine((r) => !r.socket !== !r.url, { error: "give either socket (a Unix socket) or url (mutual TLS), not both or neither" })
    .refine((r) => !r.url || (!!r.ca && !!r.cert && !!r.key), {
      error: "url needs ca, cert and key (PEM files): the signer accepts only clients with a certificate from its CA",
    });
