// Which route rows each MCP tool reaches (src/mcp/tools.ts, src/mcp/tasks.ts): an MCP tool call is a request through
// these rows with the caller's own credential, so the tools an OAuth grant allows are the rows its tokens may call, on
// every surface — the same row over plain HTTP (the SDKs) and through /mcp answer alike. The identify step checks it
// (middleware/identify); test/gateway/grant-surfaces.test.ts holds the table to the tools MCP registers.
import { AGENTS } from "./table.js";

const job = (family: string, stop = false) => [`${family}.start`, `${family}.status`, `${family}.get`, ...(stop ? [`${family}.stop`] : [])];
const agentTasks = AGENTS.map((a) => `task.${a}`);

/** Each MCP tool: the rows it calls (starting, polling, reading and, as an MCP task, cancelling its job). */
export const TOOL_ROWS: Record<string, readonly string[]> = {
  // Every caller's: the budget tool is never taken away (nor its row).
  budget: ["own.usage"],
  web_search: ["x402.web.search", "web.search"],
  web_fetch: ["x402.web.fetch", "web.fetch"],
  scrape: job("scrape"),
  crawl: job("crawl"),
  extract: job("extract"),
  agent_task: agentTasks.flatMap((t) => job(t, true)),
  job_result: ["scrape", "crawl", "extract", ...agentTasks].map((f) => `${f}.get`),
  browser_create: ["session.create"],
  browser_action: ["session.computerAction"],
  browser_stop: ["session.stop"],
  sandbox_create: ["sandbox.create"],
  // The runtime plane itself takes the sandbox's own token (src/mcp/tools.ts reads it with sandbox.get).
  sandbox_exec: ["sandbox.get"],
  sandbox_list_files: ["sandbox.get"],
  sandbox_read_file: ["sandbox.get"],
  sandbox_write_file: ["sandbox.get"],
  sandbox_stop: ["sandbox.stop"],
};

/** Rows a grant's token reaches whatever tools it allows: the MCP endpoint itself and the budget. */
const EVERY_GRANT = new Set(["mcp", "own.usage"]);

/** Whether a credential limited to `tools` may call the row named `row`. */
export function toolsReach(tools: readonly string[], row: string): boolean {
  return EVERY_GRANT.has(row) || tools.some((t) => TOOL_ROWS[t]?.includes(row));
}
