// The gateway's Hono environment. Its per-request variables are declared beside what sets them (Hono's
// ContextVariableMap): requestId (middleware/request-id), logFields (middleware/access-log), tenant (middleware/authenticate),
// caller (src/routing/caller.ts), jsonBody (src/routing/body.ts).
import type { BlankEnv } from "hono/types";

export type GatewayEnv = BlankEnv;
