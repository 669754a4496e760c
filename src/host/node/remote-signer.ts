// The gateway's side of the out-of-process signer (`[wallet] signer = "remote"`): every signature is asked of
// `tollgate signer serve` over its Unix socket or over mutual TLS (`url` + the gateway's client certificate), so the
// gateway holds no key material. Fails closed: a refusal by the
// signer's own limits is a 402 (signer_refused), an unreachable signer a 503 (signer_unavailable); either way the paid
// route releases its hold and nothing is paid. A restarted signer is used again at the next payment.
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { request as tlsRequest } from "node:https";
import { GatewayError } from "../../errors.js";
import type { TypedData, WalletSigner } from "../../payments/index.js";

const TIMEOUT_MS = 10_000;

/** Where the signer listens: its Unix socket, or an https URL reached with the gateway's client certificate. */
export type SignerTarget = { socket: string } | { url: string; ca: string; cert: string; key: string };

/** How to reach the target: the socket, or the URL with the CA and client certificate read once (PEM files). */
type Route = { socket: string } | { url: URL; ca: Buffer; cert: Buffer; key: Buffer };

function routeOf(t: SignerTarget): Route {
  if ("socket" in t) return t;
  const url = new URL(t.url);
  if (url.protocol !== "https:") throw new Error(`wallet.remote.url: expected an https:// URL (mutual TLS), not ${url.protocol}`);
  const read = (field: "ca" | "cert" | "key") => {
    try {
      return readFileSync(t[field]);
    } catch (err) {
      throw new Error(`wallet.remote.${field}: cannot read ${t[field]} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  };
  return { url, ca: read("ca"), cert: read("cert"), key: read("key") };
}

const where = (r: Route) => ("socket" in r ? r.socket : r.url.origin);

function call(route: Route, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
    const common = { method, path, timeout: TIMEOUT_MS, headers: payload ? { "content-type": "application/json" } : {} };
    const onResponse = (res: import("node:http").IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        try {
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
        } catch {
          reject(new Error("the signer answered something that is not JSON"));
        }
      });
      res.on("error", reject);
    };
    const req =
      "socket" in route
        ? request({ ...common, socketPath: route.socket }, onResponse)
        : tlsRequest(
            {
              ...common,
              host: route.url.hostname.replace(/^\[|\]$/g, ""),
              port: route.url.port || 443,
              path: `${route.url.pathname.replace(/\/$/, "")}${path}`,
              ca: route.ca,
              cert: route.cert,
              key: route.key,
              minVersion: "TLSv1.2",
              agent: false,
            },
            onResponse,
          );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end(payload);
  });
}

const unavailable = (why: string) =>
  new GatewayError(503, "signer_unavailable", `The wallet's signer cannot be reached (${why}); nothing was paid. Retry once it is back.`);

/** Connects to the signer (a socket path, or a target) and learns its address. @throws Error when it does not answer. */
export async function openRemoteSigner(target: string | SignerTarget): Promise<WalletSigner> {
  const route = routeOf(typeof target === "string" ? { socket: target } : target);
  const field = "socket" in route ? "wallet.remote.socket" : "wallet.remote.url";
  let address: unknown;
  try {
    address = (await call(route, "GET", "/address")).json.address;
  } catch (err) {
    throw new Error(
      `${field}: no signer answers at ${where(route)} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); start \`tollgate signer serve\` first`,
    );
  }
  if (typeof address !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(address))
    throw new Error(`${field}: ${where(route)} is not a Tollgate signer`);
  return {
    kind: "remote",
    address: address as `0x${string}`,
    async signTypedData(typedData: TypedData) {
      let r: Awaited<ReturnType<typeof call>>;
      try {
        r = await call(route, "POST", "/sign", { typedData });
      } catch (err) {
        throw unavailable((err as NodeJS.ErrnoException).code ?? (err as Error).message);
      }
      if (r.status === 200 && typeof r.json.signature === "string") return r.json.signature as `0x${string}`;
      if (r.status === 403)
        throw new GatewayError(
          402,
          "signer_refused",
          `The wallet's signer refused this payment: ${String(r.json.message)}. Nothing was paid.`,
        );
      throw unavailable(`it answered ${r.status}`);
    },
  };
}
