// The browser-session half of the emulator: real headless Chromium per session, CDP relay, computer actions,
// and the team's profiles, extensions and session snapshots those sessions start from.
import { Hono } from "hono";
import { join } from "node:path";
import type { EmulatorContext, EmulatorModule, SessionService } from "../types.js";
import { createCdpRelay } from "./cdp-relay.js";
import { ExtensionStore } from "./extensions.js";
import { extensionRoutes } from "./extension-routes.js";
import { liveRoutes } from "./live-page.js";
import { profileRoutes } from "./profile-routes.js";
import { ProfileStore } from "./profiles.js";
import { sessionOperationRoutes } from "./session-operation-routes.js";
import { sessionRoutes } from "./routes.js";
import { BrowserSessions } from "./session-service.js";
import { SessionSnapshotStore } from "./session-snapshots.js";

export type { SessionDetail, Session, SessionStatus } from "./session-service.js";
export { BrowserSessions } from "./session-service.js";

export async function createSessionModule(
  ctx: EmulatorContext,
): Promise<EmulatorModule & { service: SessionService; sessions: BrowserSessions }> {
  const stores = {
    profiles: new ProfileStore(join(ctx.stateDir, "profiles")),
    snapshots: new SessionSnapshotStore(join(ctx.stateDir, "session-snapshots")),
    extensions: new ExtensionStore(join(ctx.stateDir, "extensions")),
  };
  const sessions = new BrowserSessions(ctx, stores);
  const relay = createCdpRelay(ctx, sessions);
  return {
    name: "sessions",
    control: new Hono()
      .route("/", sessionRoutes(ctx, sessions))
      .route("/", sessionOperationRoutes(ctx, sessions))
      .route("/", profileRoutes(ctx, sessions))
      .route("/", extensionRoutes(ctx, stores.extensions))
      .route("/", liveRoutes(ctx, sessions)),
    upgradeControl: relay.upgrade,
    service: sessions,
    sessions,
    async close() {
      relay.close();
      await sessions.close();
    },
  };
}
