// Session snapshots: a running browser's user data and cookies saved aside, that new sessions can start from.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import type { CdpConnection } from "./cdp-connection.js";
import { copyUserData, saveCookies } from "./browser-state.js";
import { SessionError } from "./session-error.js";

/** The browser image every session snapshot is taken from (the emulator has one). */
const BROWSER_IMAGE = { imageName: "chromium-session", imageId: "img_chromium_session", imageNamespace: "public" };

export interface SessionSnapshot {
  snapshotId: string;
  snapshotName: string;
  sessionId: string;
  dir: string;
  createdAt: Date;
}

export class SessionSnapshotStore {
  private readonly snapshots = new Map<string, SessionSnapshot>();

  constructor(private readonly root: string) {}

  async capture(sessionId: string, userDataDir: string, cdp: CdpConnection): Promise<SessionSnapshot> {
    const snapshotId = randomUUID();
    const dir = join(this.root, snapshotId);
    await copyUserData(userDataDir, dir);
    await saveCookies(cdp, dir);
    const snap = { snapshotId, snapshotName: `session-${sessionId}-${Date.now()}`, sessionId, dir, createdAt: new Date() };
    this.snapshots.set(snapshotId, snap);
    return snap;
  }

  get(snapshotId: string): SessionSnapshot {
    const snap = this.snapshots.get(snapshotId);
    if (!snap) throw new SessionError(404, "not_found", `Session snapshot ${snapshotId} not found`);
    return snap;
  }

  wire(s: SessionSnapshot) {
    return {
      snapshotName: s.snapshotName,
      snapshotId: s.snapshotId,
      namespace: "team",
      status: "created",
      uploaded: true,
      ready: true,
      ...BROWSER_IMAGE,
    };
  }
}
