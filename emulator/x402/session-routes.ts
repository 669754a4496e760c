// Paid browser sessions: POST /x402/session (x402), and GET / PUT stop with the session's managementToken.
import { Hono } from "hono";
import * as z from "zod";
import type { ChainHandle, EmulatorContext, SessionService } from "../types.js";
import { describeIssues, readJsonBody } from "../search/index.js";
import type { Paywall } from "./paywall.js";
import type { PriceList } from "./prices.js";
import { checkManagementToken, issueManagementToken } from "./management-token.js";

/**
 * X402SessionParams. The published schema has `additionalProperties: false`; only screen, viewOnlyLiveView and
 * timeoutMinutes are documented, the flags below are our reading of "rest of schema not retrievable".
 */
export const x402SessionParams = z.strictObject({
  screen: z.strictObject({ width: z.int().min(500).max(3840), height: z.int().min(360).max(2160) }).optional(),
  viewOnlyLiveView: z.boolean().optional(),
  timeoutMinutes: z.int().min(5).max(60).optional(),
  useStealth: z.boolean().optional(),
  acceptCookies: z.boolean().optional(),
  adblock: z.boolean().optional(),
  trackers: z.boolean().optional(),
  annoyances: z.boolean().optional(),
});

/** Fields a management call may see: status and original expiry; credentials are never reissued. */
const PUBLIC_FIELDS = ["id", "status", "startTime", "endTime", "createdAt", "updatedAt"] as const;

interface PaidSession {
  id: string;
  payer: string;
  timeoutMinutes: number;
  expiresAt: string;
  amount: string;
}

export function createSessionRoutes(opts: {
  ctx: EmulatorContext;
  chain: ChainHandle;
  sessions: SessionService;
  paywall: Paywall;
  prices: PriceList;
}): Hono {
  const { ctx, sessions, paywall, prices } = opts;
  const paid = new Map<string, PaidSession>();
  const app = new Hono();

  app.post("/x402/session", async (c) => {
    const body = await readJsonBody(c.req.raw);
    if (!body.ok) return c.json({ message: body.message, code: "invalid_json" }, 400);
    const parsed = x402SessionParams.safeParse(body.value);
    if (!parsed.success) return c.json({ message: describeIssues(parsed.error), code: "invalid_request" }, 400);
    const params = parsed.data;
    const timeoutMinutes = params.timeoutMinutes ?? 30;
    const amount = prices.session(timeoutMinutes);
    return paywall.charge(c, {
      amount,
      description: `Browser session, ${timeoutMinutes} minutes`,
      run: async ({ payer }) => {
        let detail: Record<string, unknown>;
        try {
          detail = await sessions.create(
            {
              ...params,
              screen: params.screen ?? { width: 1280, height: 720 },
              timeoutMinutes,
              enableWebRecording: false,
              enableVideoWebRecording: false,
            },
            { owner: payer },
          );
        } catch (err) {
          const e = err as { status?: number; code?: string; message?: string };
          const status = typeof e.status === "number" && e.status >= 400 ? e.status : 503;
          return {
            status,
            charge: false,
            body: { message: e.message ?? "The session could not be started", code: e.code ?? "session_unavailable" },
          };
        }
        const id = String(detail.id);
        const expiresAt = new Date(Date.now() + timeoutMinutes * 60_000).toISOString();
        const management = await issueManagementToken(ctx.tokenSecret, id);
        paid.set(id, { id, payer, timeoutMinutes, expiresAt, amount: amount.toString() });
        return {
          status: 200,
          charge: true,
          body: { ...detail, timeoutMinutes, expiresAt, managementToken: management.token, managementTokenExpiresAt: management.expiresAt },
          undo: async () => {
            paid.delete(id);
            await sessions.stop(id);
          },
        };
      },
    });
  });

  app.get("/x402/session/:id", async (c) => {
    const id = c.req.param("id");
    const check = await checkManagementToken(ctx.tokenSecret, c.req.header("authorization"), id);
    if (!check.ok) return c.json({ message: check.message, code: check.code }, check.status);
    const record = paid.get(id);
    const live = sessions.get(id);
    if (!record || !live) return c.json({ message: `Session ${id} not found`, code: "not_found" }, 404);
    const out: Record<string, unknown> = {};
    for (const k of PUBLIC_FIELDS) if (live[k] !== undefined) out[k] = live[k];
    return c.json({ ...out, timeoutMinutes: record.timeoutMinutes, expiresAt: record.expiresAt });
  });

  app.put("/x402/session/:id/stop", async (c) => {
    const id = c.req.param("id");
    const check = await checkManagementToken(ctx.tokenSecret, c.req.header("authorization"), id);
    if (!check.ok) return c.json({ message: check.message, code: check.code }, check.status);
    if (!paid.has(id)) return c.json({ message: `Session ${id} not found`, code: "not_found" }, 404);
    await sessions.stop(id); // an already closed or errored session succeeds too
    return c.json({ success: true });
  });

  return app;
}
