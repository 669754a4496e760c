// The local facilitator over HTTP, as any x402 facilitator answers (`@x402/core`'s HTTPFacilitatorClient speaks to it):
// POST /_emulator/facilitator/verify and /settle take `{x402Version, paymentPayload, paymentRequirements}`, GET
// /supported lists what it settles. A seller in front of the emulator (Tollgate's [sales]) names this URL as its
// facilitator. `failSettle` makes /settle answer 500 after verify passed (a facilitator that fails mid-sale).
import { Hono } from "hono";
import type { LocalFacilitator } from "./facilitator.js";

export const FACILITATOR_PATH = "/_emulator/facilitator";

export interface FacilitatorSwitches {
  /** /settle answers 500 and settles nothing. */
  failSettle: boolean;
}

export function facilitatorRoutes(local: LocalFacilitator, switches: FacilitatorSwitches): Hono {
  const app = new Hono();
  const body = async (req: Request) => {
    try {
      const b = (await req.json()) as { paymentPayload?: unknown; paymentRequirements?: unknown };
      if (!b || typeof b.paymentPayload !== "object" || typeof b.paymentRequirements !== "object") return undefined;
      return b as { paymentPayload: never; paymentRequirements: never };
    } catch {
      return undefined;
    }
  };
  app.get(`${FACILITATOR_PATH}/supported`, (c) => c.json(local.facilitator.getSupported()));
  app.post(`${FACILITATOR_PATH}/verify`, async (c) => {
    const b = await body(c.req.raw);
    if (!b)
      return c.json(
        { isValid: false, invalidReason: "invalid_payload", invalidMessage: "expected paymentPayload and paymentRequirements" },
        400,
      );
    try {
      return c.json(await local.facilitator.verify(b.paymentPayload, b.paymentRequirements));
    } catch (err) {
      return c.json({ isValid: false, invalidReason: "invalid_payload", invalidMessage: String((err as Error).message ?? err) }, 400);
    }
  });
  app.post(`${FACILITATOR_PATH}/settle`, async (c) => {
    if (switches.failSettle) return c.json({ message: "facilitator unavailable (emulator switch failSettle)", code: "unavailable" }, 500);
    const b = await body(c.req.raw);
    if (!b) return c.json({ success: false, errorReason: "invalid_payload", transaction: "", network: "" }, 400);
    try {
      return c.json(await local.facilitator.settle(b.paymentPayload, b.paymentRequirements));
    } catch (err) {
      return c.json(
        {
          success: false,
          errorReason: "unexpected_settle_error",
          errorMessage: String((err as Error).message ?? err),
          transaction: "",
          network: "",
        },
        500,
      );
    }
  });
  return app;
}
