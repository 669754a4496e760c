// The job tools sold over MCP (scrape, crawl, extract, agent_task), for the credits they use: an unpaid call gets the
// `upto` PaymentRequired in its tool result (the maximum: the job's reservation × the markup, as over HTTP); the paid
// call starts the job through its HTTP row with the payment (./sell.ts: matched, verified, run as the wallet tenant,
// its sale kept pending: ./job-sales.ts), waits for it as the unsold tool does, and carries the receipt in
// `_meta["x402/payment-response"]` once the job ended and its sale settled — or `tollgate/sale: "metered"` while it
// still runs (it settles at its end all the same).
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, SettleResponse } from "@x402/core/types";
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import { errorResult, GatewayCall, type Json, jsonResult } from "../mcp/call.js";
import { type ToolExtra, WAIT_DEFAULT_S, WAIT_MAX_S, waitForJob } from "../mcp/jobs.js";
import type { JobTool } from "../mcp/tools.js";
import { atomicToUsd } from "../payments/index.js";
import { publicOriginOf } from "../web/public-origin.js";
import { JOB_ROWS, jobMaxCost } from "./job-offer.js";
import { type Offer, offerFor } from "./offer.js";
import type { SellParts } from "./sell.js";

const PAYMENT_META = "x402/payment";
const RESPONSE_META = "x402/payment-response";

/** How a tool result asks for payment (the storefront's binding: tool result, or the extension's). */
export type AskForPayment = (offer: Offer, extra: ToolExtra, error: string, meta?: Record<string, unknown>) => CallToolResult;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The start row a job tool's call goes to. */
const rowAt = (path: string) => [...JOB_ROWS.values()].find((r) => r.path === path);

export function soldJobTool(parts: SellParts, c: Context<GatewayEnv>, name: string, tool: JobTool, ask: AskForPayment) {
  const { services, sales, payTo } = parts;
  const log = (error: string) => services.logger.error("mcp job sale failed", { error, tool: name });
  return async (args: Json, extra: ToolExtra): Promise<CallToolResult> => {
    let path: string;
    let body: Json;
    try {
      path = tool.path(args);
      body = tool.body(args);
    } catch (err) {
      return errorResult(err, log);
    }
    const row = rowAt(path);
    if (!row || !parts.jobs) return errorResult(new GatewayError(404, "not_sold", `${name} is not sold here.`), log);
    let offer: Offer;
    try {
      const url = `mcp://${new URL(publicOriginOf(c, services)).host}/tools/${name}`;
      offer = offerFor(services.config, sales, "jobs", url, payTo, await parts.upto.byNetwork(), jobMaxCost(services.config, row, body));
    } catch (err) {
      return errorResult(err, log);
    }
    const payload = (extra._meta as Record<string, unknown> | undefined)?.[PAYMENT_META] as PaymentPayload | undefined;
    if (payload === undefined)
      return ask(
        offer,
        extra,
        `Payment required: ${name} costs the credits it uses with the markup, at most $${atomicToUsd(offer.priceMicroUsd)} for these arguments; pay with x402 upto in _meta["${PAYMENT_META}"].`,
      );
    if (!payload || typeof payload !== "object" || payload.x402Version !== 2)
      return ask(offer, extra, `_meta["${PAYMENT_META}"] is not an x402 v2 PaymentPayload.`);
    // The start is the HTTP sale itself: the same offer from the same body, so the same payment answers it.
    const headers = new Headers({ "content-type": "application/json", accept: "application/json" });
    headers.set("payment-signature", encodePaymentSignatureHeader(payload));
    const requestId = c.get("requestId");
    if (requestId) headers.set("x-request-id", `${requestId}.sale`);
    if (!services.dispatch) return errorResult(new GatewayError(503, "unavailable", "The gateway cannot run tools now."), log);
    const res = await services.dispatch(
      new Request(new URL(path, new URL(c.req.url).origin), { method: "POST", headers, body: JSON.stringify(body) }),
      c,
    );
    const started = (await res.json().catch(() => ({}))) as Json;
    const walletToken = res.headers.get("x-tollgate-wallet-token");
    if (!res.ok || !walletToken) {
      const refused = new GatewayError(res.status, String(started.code ?? `http_${res.status}`), String(started.message ?? "Not started."));
      // Not matched or not verified: asked again, with the reason. Anything else (a budget, the upstream): not charged.
      if (res.status === 402 && res.headers.get("x-tollgate-sale") === null) return ask(offer, extra, refused.message);
      return { ...errorResult(refused, log), _meta: { "tollgate/sale": "not-charged" } };
    }
    const id = String(started.jobId ?? "");
    const wallet = { token: walletToken, expiresAt: res.headers.get("x-tollgate-wallet-token-expires") };
    let job: Json;
    try {
      const wait = Math.min(Number(args.wait ?? WAIT_DEFAULT_S), WAIT_MAX_S);
      job = await waitForJob(new GatewayCall(services, c, walletToken), extra, path, id, started, wait);
    } catch (err) {
      return { ...errorResult(err, log), _meta: { "tollgate/sale": "metered", "tollgate/wallet-token": wallet } };
    }
    // Ended: its read through the gateway (or the selling instance's follow-up) settled the sale; a moment for one
    // still in flight.
    let receipt: SettleResponse | undefined;
    for (let i = 0; job.done === true && i < 50 && !receipt; i++) {
      receipt = await parts.jobs.receipt(id);
      if (!receipt) await sleep(100);
    }
    const sale = !receipt ? "metered" : receipt.success && receipt.amount !== "0" ? "charged" : "not-charged";
    return {
      ...jsonResult(job),
      _meta: { ...(receipt ? { [RESPONSE_META]: receipt } : {}), "tollgate/sale": sale, "tollgate/wallet-token": wallet },
    };
  };
}
