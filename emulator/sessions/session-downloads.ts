// Downloads of a session's browser: saved into the session's own directory and logged as `file_downloaded`.
import { basename } from "node:path";
import type { CdpConnection, CdpEvent } from "./cdp-connection.js";
import type { SessionEventLogs } from "./session-events.js";

/** Lets the browser download into `dir` and logs each finished download; returns how to stop listening. */
export async function collectDownloads(cdp: CdpConnection, dir: string, events: SessionEventLogs): Promise<() => void> {
  const started = new Map<string, { url: string; fileName: string; frameId?: string }>();
  const onEvent = (e: CdpEvent) => {
    if (e.method === "Browser.downloadWillBegin") {
      started.set(e.params.guid, {
        url: e.params.url,
        fileName: basename(e.params.suggestedFilename || "download"),
        frameId: e.params.frameId,
      });
    } else if (e.method === "Browser.downloadProgress" && e.params.state === "completed") {
      const d = started.get(e.params.guid);
      started.delete(e.params.guid);
      events.record("file_downloaded", {
        targetId: d?.frameId ?? null,
        pageUrl: d?.url ?? null,
        metadata: {
          fileName: d?.fileName ?? e.params.guid,
          url: d?.url ?? null,
          size: e.params.receivedBytes ?? e.params.totalBytes ?? null,
        },
      });
    } else if (e.method === "Browser.downloadProgress" && e.params.state === "canceled") {
      started.delete(e.params.guid);
    }
  };
  cdp.on("event", onEvent);
  await cdp.send("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: dir, eventsEnabled: true });
  return () => cdp.off("event", onEvent);
}
