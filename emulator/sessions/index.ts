// The browser-session half of the emulator: real headless Chromium per session, CDP relay, computer actions.
import type { EmulatorContext, EmulatorModule, SessionService } from "../types.js";
import { createCdpRelay } from "./cdp-relay.js";
import { sessionRoutes } from "./routes.js";
import { BrowserSessions } from "./session-service.js";

export type { SessionDetail, Session, SessionStatus } from "./session-service.js";
export { BrowserSessions } from "./session-service.js";

export async function createSessionModule(ctx: EmulatorContext): Promise<EmulatorModule & { service: SessionService; sessions: BrowserSessions }> {
  const sessions = new BrowserSessions(ctx);
  const relay = createCdpRelay(ctx, sessions);
  return {
    name: "sessions",
    control: sessionRoutes(ctx, sessions),
    upgradeControl: relay.upgrade,
    service: sessions,
    sessions,
    async close() {
      relay.close();
      await sessions.close();
    },
  };
}
