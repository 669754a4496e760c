// The gateway's side of the out-of-process signer (`[wallet] signer = "remote"`): every signature is asked of
// `tollgate signer serve` over its Unix socket, so the gateway holds no key material. Fails closed: a refusal by the
// signer's own limits is a 402 (signer_refused), an unreachable signer a 503 (signer_unavailable); either way the paid
// route releases its hold and nothing is paid. A restarted signer is used again at the next payment.
import { request } from "node:http";
import { GatewayError } from "../../errors.js";
import type { TypedData, WalletSigner } from "../../payments/wallet-signer.js";

const TIMEOUT_MS = 10_000;

function call(socket: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
    const req = request(
      { socketPath: socket, method, path, timeout: TIMEOUT_MS, headers: payload ? { "content-type": "application/json" } : {} },
      (res) => {
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
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end(payload);
  });
}

const unavailable = (why: string) =>
  new GatewayError(503, "signer_unavailable", `The wallet's signer cannot be reached (${why}); nothing was paid. Retry once it is back.`);

/** Connects to the signer at `socket` and learns its address. @throws Error when it does not answer. */
export async function openRemoteSigner(socket: string): Promise<WalletSigner> {
  let address: unknown;
  try {
    address = (await call(socket, "GET", "/address")).json.address;
  } catch (err) {
    throw new Error(
      `wallet.remote.socket: no signer answers at ${socket} (${(err as Error).message}); start \`tollgate signer serve\` first`,
    );
  }
  if (typeof address !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(address))
    throw new Error(`wallet.remote.socket: ${socket} is not a Tollgate signer`);
  return {
    kind: "remote",
    address: address as `0x${string}`,
    async signTypedData(typedData: TypedData) {
      let r: Awaited<ReturnType<typeof call>>;
      try {
        r = await call(socket, "POST", "/sign", { typedData });
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
