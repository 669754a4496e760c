// `tollgate signer serve`: the wallet's key (or its PKCS#11 session) in a process of its own, reached over a Unix
// socket (mode 0600), or over TCP with mutual TLS (only clients with a certificate from its CA), by gateways that
// hold no key material. It enforces its own limits (src/payments/signer-limits.ts)
// whatever a gateway asks, counts what it signed per UTC day in a state file written before each signature leaves
// (so a restart resumes the day's count), and signs one request at a time.
//   GET  /address → {"address"}
//   POST /sign {"typedData"} (bigints as decimal strings) → 200 {"signature"} | 403 {"code":"signer_refused","message"}
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { chmod, readFile, rename, rm, writeFile } from "node:fs/promises";
import { limitRefusal, readAuthorization, type SignerLimits, type TypedData, type WalletSigner } from "../../payments/index.js";

/** Mutual TLS on TCP: PEM files of the signer's certificate and key, and of the CA its clients' certificates come from. */
export interface SignerTls {
  host: string;
  /** 0: any free port (the server answers which). */
  port: number;
  cert: string;
  key: string;
  ca: string;
}

export interface SignerServerOptions {
  /** The Unix socket to listen on (mode 0600); or `tls` for TCP with mutual TLS. */
  socket?: string;
  tls?: SignerTls;
  wallet: WalletSigner;
  limits: SignerLimits;
  /** Where the day's signed total is kept across restarts. */
  stateFile: string;
  now?: () => number;
  /** One line per decision (never a signature). */
  log?: (fields: Record<string, unknown>) => void;
}

const BODY_LIMIT = 64 * 1024;

interface DayTotal {
  day: string;
  spent: bigint;
}

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

async function loadDay(file: string, today: string): Promise<DayTotal> {
  try {
    const s = JSON.parse(await readFile(file, "utf8")) as { day?: string; spent?: string };
    if (s.day === today && typeof s.spent === "string" && /^\d+$/.test(s.spent)) return { day: today, spent: BigInt(s.spent) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw new Error(`signer state ${file}: ${(err as Error).message}`);
  }
  return { day: today, spent: 0n };
}

async function saveDay(file: string, d: DayTotal): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify({ day: d.day, spent: d.spent.toString() }), { mode: 0o600 });
  await rename(tmp, file);
}

/** Typed data off the wire: the EIP-3009 message's integers (and the chain id) back to numbers. */
function revive(raw: unknown): TypedData | undefined {
  if (!raw || typeof raw !== "object") return undefined;
  const d = raw as TypedData;
  if (!d.domain || !d.types || !d.message || typeof d.primaryType !== "string") return undefined;
  const message = { ...d.message };
  for (const k of ["value", "validAfter", "validBefore"])
    if (typeof message[k] === "string" && /^\d+$/.test(message[k] as string)) message[k] = BigInt(message[k] as string);
  const domain = { ...d.domain };
  if (typeof domain.chainId === "string" && /^\d+$/.test(domain.chainId)) domain.chainId = Number(domain.chainId);
  return { domain, types: d.types, primaryType: d.primaryType, message };
}

async function bodyOf(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > BODY_LIMIT) throw new Error("body too large");
    chunks.push(c as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

export async function startSignerServer(o: SignerServerOptions): Promise<{ close(): Promise<void>; port?: number }> {
  const now = o.now ?? Date.now;
  const log = o.log ?? (() => {});
  let day = await loadDay(o.stateFile, dayOf(now()));
  let queue: Promise<unknown> = Promise.resolve();

  async function sign(data: TypedData): Promise<[number, unknown]> {
    const a = readAuthorization(data, o.wallet.address);
    if ("refused" in a) return [403, { code: "signer_refused", message: a.refused }];
    const t = now();
    if (day.day !== dayOf(t)) day = { day: dayOf(t), spent: 0n };
    const refused = limitRefusal(a, o.wallet.address, o.limits, day.spent, Math.floor(t / 1000));
    if (refused) {
      log({ decision: "refused", reason: refused, value: a.value.toString(), to: a.to, chainId: a.chainId });
      return [403, { code: "signer_refused", message: refused }];
    }
    // Counted and written down before the signature leaves: a crash after this over-counts, never under-counts.
    const next = { day: day.day, spent: day.spent + a.value };
    await saveDay(o.stateFile, next);
    day = next;
    const signature = await o.wallet.signTypedData(data);
    log({ decision: "signed", value: a.value.toString(), to: a.to, chainId: a.chainId, spentToday: day.spent.toString() });
    return [200, { signature }];
  }

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === "GET" && req.url === "/address") return answer(res, 200, { address: o.wallet.address, kind: o.wallet.kind });
    if (req.method !== "POST" || req.url !== "/sign") return answer(res, 404, { code: "not_found", message: "GET /address or POST /sign" });
    bodyOf(req)
      .then((body) => {
        const data = revive((body as { typedData?: unknown })?.typedData);
        if (!data)
          return answer(res, 400, { code: "invalid_request", message: "expected {typedData: {domain, types, primaryType, message}}" });
        const run = queue.then(() => sign(data));
        queue = run.catch(() => {});
        return run.then(
          ([status, out]) => answer(res, status, out),
          (err) => {
            log({ decision: "failed", error: String((err as Error)?.message ?? err) });
            answer(res, 503, { code: "signer_failed", message: "the signer could not sign" });
          },
        );
      })
      .catch(() => answer(res, 400, { code: "invalid_request", message: "the body is not JSON of at most 64 KiB" }));
  };
  if (!o.socket === !o.tls) throw new Error("the signer listens on a Unix socket or over mutual TLS: give one of the two");
  const server = o.tls
    ? createTlsServer(
        {
          cert: await readFile(o.tls.cert),
          key: await readFile(o.tls.key),
          ca: await readFile(o.tls.ca),
          // Mutual TLS: a client without a certificate from `ca` is refused during the handshake.
          requestCert: true,
          rejectUnauthorized: true,
          minVersion: "TLSv1.2",
        },
        handler,
      )
    : createServer(handler);
  if (o.socket) await rm(o.socket, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    if (o.tls) server.listen(o.tls.port, o.tls.host, () => resolve());
    else server.listen(o.socket, () => resolve());
  });
  if (o.socket) await chmod(o.socket, 0o600);
  return {
    port: o.tls ? (server.address() as AddressInfo).port : undefined,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
