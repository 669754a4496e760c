// What stands for the internet from inside an emulator sandbox. Sandboxes have a network namespace of their own with
// loopback only, so nothing outside is reachable, as a real sandbox reaches nothing its egress list refuses. The
// destinations listed here (`host:port` on this machine: a Tollgate gateway in front of the emulator, so that its
// `$TOLLGATE_EGRESS` works from inside) are reachable as real ones reach the internet: inside the sandbox, the agent
// listens on 127.0.0.1:<port> and hands each connection over a unix socket to the host side below, which connects it
// to the destination only while the sandbox runs and its network settings let it out (allowInternetAccess, allowOut,
// denyOut: an entry `*`, the destination's host, or an address or CIDR range holding its loopback address — 127.0.0.1
// for `localhost`, else its own 127.x.y.z — each optionally with `:port`). A
// destination the list refuses has no listener inside, so a connection to it is refused at once; one refused after it
// was opened is reset. What it does not approximate: a real sandbox resolves public names and reaches any address its
// list allows; here only the listed loopback ports.
import { chmod, chown, rm } from "node:fs/promises";
import { connect, createServer, type Server } from "node:net";
import { join } from "node:path";
import { SANDBOX_GID, SANDBOX_UID } from "./images.js";

/** The destinations sandboxes reach (shared by the emulator's sandboxes; the embedded default adds the gateway). */
export class SandboxInternet {
  private readonly targets = new Set<string>();

  /**
   * Makes `host:port` (a loopback host: `localhost` or an address of 127.0.0.0/8, each standing for a machine of its
   * own on the internet) reachable from sandboxes started from now on.
   */
  add(hostPort: string): void {
    const port = Number(hostPort.split(":").at(-1));
    if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error(`${hostPort}: expected host:port`);
    const host = hostPort.slice(0, hostPort.lastIndexOf(":")).toLowerCase();
    if (host !== "localhost" && !/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) throw new Error(`${hostPort}: expected a loopback host`);
    this.targets.add(hostPort.toLowerCase());
  }

  list(): Array<{ host: string; port: number }> {
    return [...this.targets].map((t) => {
      const at = t.lastIndexOf(":");
      return { host: t.slice(0, at), port: Number(t.slice(at + 1)) };
    });
  }
}

/** A sandbox's network settings (its create body or PUT /network). */
export interface NetworkRules {
  allowInternetAccess: boolean;
  allowOut: string[];
  denyOut: string[];
}

const IPV4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)(?:\/(\d+))?$/;
const ipv4 = (m: RegExpExecArray) => ((Number(m[1]) << 24) | (Number(m[2]) << 16) | (Number(m[3]) << 8) | Number(m[4])) >>> 0;

/** The loopback address a destination is reached at: its own (127.x.y.z) or, for `localhost`, 127.0.0.1. */
export const addressOf = (host: string): string => (host === "localhost" ? "127.0.0.1" : host);

const matchesHost = (r: string, host: string): boolean => {
  if (r === "*" || r === host) return true;
  if (r.startsWith("*.") && host.endsWith(r.slice(1))) return true;
  // A CIDR range or an address: compared with the destination's loopback address (localhost's is 127.0.0.1).
  const m = IPV4.exec(r);
  if (!m) return r === "::1" || r === "::1/128" ? host === "localhost" : false;
  const at = IPV4.exec(addressOf(host));
  if (!at) return false;
  const bits = m[5] === undefined ? 32 : Number(m[5]);
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  return (ipv4(m) & mask) >>> 0 === (ipv4(at) & mask) >>> 0;
};

/** Whether one list entry names the destination: `*`, a host, `*.domain`, an address or CIDR range, each with an optional `:port`. */
const matches = (rule: string, host: string, port: number): boolean => {
  const r = rule.trim().toLowerCase();
  const withPort = /^(.+):(\d{1,5})$/.exec(r);
  if (withPort && !withPort[1]!.includes(":")) return Number(withPort[2]) === port && matchesHost(withPort[1]!, host);
  return matchesHost(r, host);
};

/** Whether a sandbox's rules let it reach `host:port` (denyOut wins; allowOut opens what allowInternetAccess=false shuts). */
export function mayReach(rules: NetworkRules, host: string, port: number): boolean {
  if (rules.denyOut.some((r) => matches(r, host, port))) return false;
  return rules.allowInternetAccess || rules.allowOut.some((r) => matches(r, host, port));
}

/**
 * Opens one destination to a running sandbox: a unix socket in the sandbox user's socket directory, which the agent
 * inside bridges 127.0.0.1:<port> to. Returns the host-side server (closed when the sandbox stops).
 */
export async function openOutbound(opts: {
  sockDir: string;
  target: { host: string; port: number };
  allowed: () => boolean;
  listenInside: (socketInSandbox: string) => Promise<void>;
  log: (event: string, fields: Record<string, unknown>) => void;
}): Promise<Server> {
  const file = `out-${addressOf(opts.target.host)}-${opts.target.port}.sock`;
  const hostPath = join(opts.sockDir, "user", file);
  await rm(hostPath, { force: true });
  const server = createServer((sock) => {
    if (!opts.allowed()) {
      opts.log("sandbox.egress.refused", { target: `${opts.target.host}:${opts.target.port}` });
      return void sock.destroy();
    }
    const out = connect({ host: addressOf(opts.target.host), port: opts.target.port });
    out.on("error", () => sock.destroy());
    sock.on("error", () => out.destroy());
    sock.pipe(out).pipe(sock);
  });
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(hostPath, () => resolve()));
  await chown(hostPath, SANDBOX_UID, SANDBOX_GID).catch(() => {});
  await chmod(hostPath, 0o600).catch(() => {});
  await opts.listenInside(`/run/tollgate/sock/user/${file}`);
  return server;
}
