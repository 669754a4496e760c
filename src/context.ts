// The gateway's Hono environment. Its per-request variables are declared beside what sets them (Hono's
// ContextVariableMap): requestId (middleware/request-id), logFields (middleware/access-log), tenant (middleware/identify),
// caller (middleware/identify/index.ts), jsonBody (middleware/body-limit/index.ts).
import type { BlankEnv } from "hono/types";

export type GatewayEnv = BlankEnv;
