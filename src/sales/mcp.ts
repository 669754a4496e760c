// Tollgate sells over MCP (docs/sales.md, "Over MCP"): with `sales.mcp`, a keyless caller of /mcp is a buyer. It lists
// the sold tools free and pays per call as the x402 MCP transport says (x402 `specs/transports-v2/mcp.md`):
//   - an unpaid `tools/call` answers the PaymentRequired: the tool-result binding (`isError`, the PaymentRequired in
//     `structuredContent` and as JSON in `content[0].text`), or, when the request's client capabilities declare the
//     `org.x402/payment` extension (MCP 2026-07-28), `resultType: "payment_required"` with `paymentRequired`;
//   - the retry carries the PaymentPayload in `params._meta["x402/payment"]`: matched to the offer, verified by the
//     facilitator, then the tool runs as the buyer's wallet tenant (the same rows, budgets, ledger as an HTTP sale);
//   - settled only when the tool succeeded; the receipt in `result._meta["x402/payment-response"]`, the wallet token
//     beside it. A tool that failed settles nothing; a settlement that fails returns no content, only the payment error.
// A caller with a key or token is not a buyer: /mcp's own row serves it as before.
import { StreamableHTTPTransport } from "@hono/mcp";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import type { Context, MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { SaleClass } from "../../config/sales-schema.js";
import type { GatewayEnv } from "../context.js";
import { GatewayError, jsonResponse } from "../errors.js";
import { MCP_SCOPES, type McpScope } from "../identity/tokens.js";
import { errorResult, GatewayCall } from "../mcp/call.js";
import type { ToolExtra } from "../mcp/jobs.js";
import { answerStateless, isStateless } from "../mcp/stateless.js";
import { jobTools, webTools } from "../mcp/tools.js";
import { type AskForPayment, soldJobTool } from "./mcp-jobs.js";
import { atomicToUsd } from "../payments/index.js";
import { jsonValue } from "../routing/json-body.js";
import { publicOriginOf } from "../web/public-origin.js";
import { matchPayload, offerFor, payerOf, paymentIdentifier, paymentRequired, settleSale } from "./offer.js";
import type { SellParts } from "./sell.js";

/** The tools sold, and the class each is priced as. */
export const SOLD_TOOLS: Readonly<Record<"web_search" | "web_fetch", SaleClass>> = { web_search: "search", web_fetch: "fetch" };

const PAYMENT_META = "x402/payment";
const RESPONSE_META = "x402/payment-response";
/** The experimental MCP extension binding (MCP 2026-07-28 per-request client capabilities). */
const EXTENSION = "org.x402/payment";
const CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities";
const WALLET_TOKEN_META = "tollgate/wallet-token";
const SALE_META = "tollgate/sale";

const MCP_BODY_LIMIT = 1024 * 1024;
const REPLAY_MS = 24 * 3600_000;
const LEASE_MS = 5 * 60_000;
const WALLET_TOKEN_SECONDS = 24 * 3600;
const SERVER_INFO = { name: "tollgate", version: "1.0.0" };
const CAPABILITIES = { tools: {} };

const hasCredential = (h: Headers) => h.has("x-api-key") || h.has("authorization");

type Meta = Record<string, unknown> | undefined;

/** Whether the request's per-request client capabilities declare the `org.x402/payment` extension. */
function declaresExtension(meta: Meta): boolean {
  const caps = meta?.[CLIENT_CAPABILITIES] as { extensions?: Record<string, unknown> } | undefined;
  return !!caps?.extensions && typeof caps.extensions === "object" && EXTENSION in caps.extensions;
}

/** The PaymentRequired as a tool result, in the binding the client reads. */
function askForPayment(required: PaymentRequired, extension: boolean, meta?: Record<string, unknown>): CallToolResult {
  const _meta = meta ? { _meta: meta } : {};
  if (extension) return { resultType: "payment_required", paymentRequired: required, content: [], ..._meta } as unknown as CallToolResult;
  return {
    isError: true,
    structuredContent: required as unknown as Record<string, unknown>,
    content: [{ type: "text", text: JSON.stringify(required) }],
    ..._meta,
  };
}

/**
 * The storefront in front of /mcp's row: keyless callers only (a key or token goes on to the row). `pays` is where the
 * web tools send their requests (the x402 rows when the gateway holds a wallet).
 */
export function mcpStorefront(parts: SellParts, pays: "x402" | "credits"): MiddlewareHandler<GatewayEnv> {
  const { services, sales, payTo, facilitator, wallets, book } = parts;
  const sold = (Object.entries(SOLD_TOOLS) as Array<[keyof typeof SOLD_TOOLS, SaleClass]>).filter(([, cls]) => sales.prices[cls]);
  const log = (error: string) => services.logger.error("mcp sale failed", { error });

  /** One paid tool call: the payment in `_meta` checked, the tool run as the wallet tenant, then settled. */
  const paidTool =
    (c: Context<GatewayEnv>, name: keyof typeof SOLD_TOOLS, cls: SaleClass) =>
    async (args: Record<string, unknown>, extra: ToolExtra): Promise<CallToolResult> => {
      const meta = extra._meta as Meta;
      const extension = declaresExtension(meta);
      const offer = offerFor(services.config, sales, cls, `mcp://${new URL(publicOriginOf(c, services)).host}/tools/${name}`, payTo);
      const ask = (error: string, m?: Record<string, unknown>) => {
        // The Bazaar extension describes an HTTP call: a tool's input is its MCP schema, listed by tools/list.
        const { bazaar: _http, ...extensions } = paymentRequired(offer, error).extensions ?? {};
        return askForPayment({ ...paymentRequired(offer, error), extensions }, extension, m);
      };
      const price = atomicToUsd(offer.priceMicroUsd);
      const raw = meta?.[PAYMENT_META];
      if (raw === undefined) return ask(`Payment required: ${name} costs $${price} a call; pay with x402 in _meta["${PAYMENT_META}"].`);
      const payload = raw as PaymentPayload;
      if (!payload || typeof payload !== "object" || payload.x402Version !== 2)
        return ask(`_meta["${PAYMENT_META}"] is not an x402 v2 PaymentPayload.`);
      const requirements = matchPayload(offer, payload) as PaymentRequirements | undefined;
      if (!requirements) return ask("The payment does not answer this offer (scheme, network, asset, payee or amount differ).");
      const payer = payerOf(payload);
      if (!payer) return ask("The payment names no payer (an EIP-3009 authorization was expected).");

      let verified: { isValid: boolean; invalidReason?: string };
      try {
        verified = await facilitator.verify(payload, requirements);
      } catch (err) {
        const data = (err as { invalidReason?: string; response?: { invalidReason?: string } }) ?? {};
        verified = { isValid: false, invalidReason: data.invalidReason ?? data.response?.invalidReason ?? "facilitator_unavailable" };
      }
      // A retry naming the same payment-identifier: the first result again, not charged again (same payer, same tool).
      const id = paymentIdentifier(payload);
      const idemKey = id ? `sale:${id}` : undefined;
      const fingerprint = `${payer.toLowerCase()} MCP ${name}`;
      if (idemKey) {
        const begun = await services.stores.idempotency.begin(idemKey, fingerprint, LEASE_MS);
        if (begun.state === "done") {
          const signedByPayer = verified.isValid || /nonce_already_used/.test(verified.invalidReason ?? "");
          if (begun.response.fingerprint !== fingerprint || !signedByPayer)
            return errorResult(
              new GatewayError(409, "payment_identifier_reused", "This payment-identifier was used by another payer or for another call."),
              log,
            );
          const first = JSON.parse(begun.response.body) as CallToolResult;
          return { ...first, _meta: { ...first._meta, [SALE_META]: "replayed" } };
        }
        if (begun.state === "pending")
          return errorResult(
            new GatewayError(409, "payment_in_progress", "A sale with this payment-identifier is in progress; retry in a moment."),
            log,
          );
      }
      const settledNothing = async () => {
        if (idemKey) await services.stores.idempotency.abandon(idemKey);
      };
      if (!verified.isValid) {
        await settledNothing();
        return ask(`The facilitator refused the payment: ${verified.invalidReason ?? "invalid"}.`);
      }

      let result: CallToolResult;
      let caller: Awaited<ReturnType<typeof wallets.callerFor>>;
      try {
        caller = await wallets.callerFor(payer, c.get("requestId"));
        const call = new GatewayCall(services, c, caller.presented);
        result = await webTools({ call, pays, log })[name].handler(args, extra);
      } catch (err) {
        await settledNothing();
        return errorResult(err, log);
      }
      if (result.isError) {
        // Refused or failed (a budget, the upstream): nothing is settled, the buyer's authorization lapses.
        await settledNothing();
        return { ...result, _meta: { ...result._meta, [SALE_META]: "not-charged" } };
      }
      const settled = await settleSale(facilitator, payload, requirements);
      if (!settled.success) {
        // The tool ran but was not paid for: its content is withheld, only the payment error goes back.
        await settledNothing();
        services.logger.error("sale not settled", {
          requestId: c.get("requestId"),
          tenant: caller.tenant.id,
          tool: name,
          reason: settled.errorReason,
        });
        return ask(`Payment settlement failed (${settled.errorReason ?? "unknown"}); the result is withheld and nothing was charged.`, {
          [RESPONSE_META]: settled,
        });
      }
      await book.record({
        at: services.now(),
        tenant: caller.tenant.id,
        payer: settled.payer ?? payer,
        payTo,
        row: `mcp.${name}`,
        class: cls,
        network: requirements.network,
        asset: requirements.asset,
        amount: requirements.amount,
        priceMicroUsd: offer.priceMicroUsd.toString(),
        transaction: settled.transaction,
        requestId: c.get("requestId"),
        paymentId: id,
      });
      // The way back to what it bought, as an HTTP sale's x-tollgate-wallet-token: spends nothing (cap 0).
      const walletToken = await services.tokens.mint({
        tenant: caller.tenant.id,
        kind: "mcp",
        scopes: caller.tenant.scopes.filter((x): x is McpScope => (MCP_SCOPES as readonly string[]).includes(x)),
        cap: 0n,
        keyless: true,
        ttlSeconds: WALLET_TOKEN_SECONDS,
      });
      const out: CallToolResult = {
        ...result,
        _meta: {
          ...result._meta,
          [RESPONSE_META]: settled,
          [SALE_META]: "charged",
          [WALLET_TOKEN_META]: { token: walletToken.token, expiresAt: walletToken.expiresAt },
        },
      };
      if (idemKey)
        await services.stores.idempotency.complete(
          idemKey,
          { status: 200, headers: {}, body: JSON.stringify(out), fingerprint },
          REPLAY_MS,
        );
      return out;
    };

  return async function storefront(c, next) {
    if (hasCredential(c.req.raw.headers)) return next();
    if (c.req.method !== "POST")
      return jsonResponse(
        405,
        { jsonrpc: "2.0", id: null, error: { code: -32000, message: "Send MCP messages with POST." } },
        { allow: "POST" },
      );
    let message: unknown;
    try {
      message = await jsonValue(c, services.platform, MCP_BODY_LIMIT);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      return jsonResponse(err.status, {
        jsonrpc: "2.0",
        id: null,
        error: { code: -32700, message: err.message, data: { code: err.code } },
      });
    }
    c.get("logFields").route = "mcp.sales";
    const server = new McpServer(SERVER_INFO, { capabilities: CAPABILITIES });
    for (const [name, cls] of sold) {
      const price = atomicToUsd(offerFor(services.config, sales, cls, "mcp://tollgate", payTo).priceMicroUsd);
      const tool = webTools({ call: undefined as unknown as GatewayCall, pays, log })[name];
      server.registerTool(
        name,
        { ...tool.config, description: `${tool.config.description} Sold: $${price} a call, paid with x402 (_meta["${PAYMENT_META}"]).` },
        paidTool(c, name, cls) as never,
      );
    }
    // Jobs sold by the credits they use (./mcp-jobs.ts): the job tools of the scopes a buyer gets.
    if (parts.jobs) {
      const askJob: AskForPayment = (offer, extra, error, m) => {
        const { bazaar: _http, ...extensions } = paymentRequired(offer, error).extensions ?? {};
        return askForPayment({ ...paymentRequired(offer, error), extensions }, declaresExtension(extra._meta as Meta), m);
      };
      const markup = sales.prices.jobs?.markupPercent ?? 0;
      for (const [name, tool] of Object.entries(jobTools()))
        server.registerTool(
          name,
          {
            ...tool.config,
            description: `${tool.config.description} Sold: the credits it uses + ${markup} %, paid with x402 upto (_meta["${PAYMENT_META}"]) when it ends.`,
          },
          soldJobTool(parts, c, name, tool, askJob) as never,
        );
    }
    if (isStateless(c, message))
      return answerStateless(c, message, server, {
        capabilities: { ...CAPABILITIES, extensions: { [EXTENSION]: {} } },
        serverInfo: SERVER_INFO,
      });
    const transport = new StreamableHTTPTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    try {
      return (await transport.handleRequest(c, message)) ?? c.body(null, 202);
    } catch (err) {
      if (err instanceof HTTPException) return err.getResponse();
      throw err;
    }
  };
}
