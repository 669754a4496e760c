// Start-and-wait for credit-billed jobs (scrape, crawl, extract, agent tasks) as MCP tools: the job is started through
// its start row, polled through its status row while the client hears progress, and read through its get row, so the
// reservation, the owner check and the settlement are the rows' own.
import type { ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { type GatewayCall, type Json, ToolRefusal } from "./call.js";

export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const ENDED = new Set(["completed", "failed", "stopped", "cancelled", "timed_out"]);
const POLL_MS = 500;
/** How long a tool waits for its job by default, and at most (a client may ask for less). */
export const WAIT_DEFAULT_S = 120,
  WAIT_MAX_S = 600;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}

/**
 * Starts a job at `path` (a row such as /api/crawl) and waits until it ends or `waitSeconds` pass, sending
 * `notifications/progress` after every poll when the client asked for progress. The job's full answer when it ended;
 * its id and last status when the wait ran out (read it later with the job tool).
 */
export async function startAndWait(call: GatewayCall, extra: ToolExtra, path: string, body: Json, waitSeconds: number): Promise<Json> {
  const started = await call.json("POST", path, body);
  const id = String(started.jobId ?? started.id ?? "");
  if (!id) throw new ToolRefusal(502, "upstream_bad_response", "The job was started without an id.");
  return waitForJob(call, extra, path, id, started, waitSeconds);
}

/** Waits for the job `id` started at `path` (its start answer `started`), as startAndWait does once it started it. */
export async function waitForJob(
  call: GatewayCall,
  extra: ToolExtra,
  path: string,
  id: string,
  started: Json,
  waitSeconds: number,
): Promise<Json> {
  const token = extra._meta?.progressToken;
  const deadline = Date.now() + waitSeconds * 1000;
  let status = String(started.status ?? "pending");
  for (let polls = 1; ; polls++) {
    const st = await call.json("GET", `${path}/${encodeURIComponent(id)}/status`);
    status = String(st.status ?? status);
    if (token !== undefined)
      await extra.sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: polls, message: `${id}: ${status}` },
      });
    if (ENDED.has(status)) break;
    if (Date.now() >= deadline || extra.signal.aborted)
      return { jobId: id, status, done: false, note: "Still running: read it later with the job_result tool." };
    await sleep(POLL_MS, extra.signal);
  }
  const job = await call.json("GET", `${path}/${encodeURIComponent(id)}`);
  return { jobId: id, ...job, status: String(job.status ?? status), done: true };
}
