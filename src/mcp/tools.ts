// The MCP tools, per scope: each builds the request the SDK would send and sends it through its row (./call.ts), so
// every check, budget, cap and ledger entry is the HTTP path's. A caller is shown only the tools its scopes allow.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod";
import { AGENTS } from "../routing/table.js";
import type { McpScope } from "../identity/tokens.js";
import { errorResult, type GatewayCall, type Json, jsonResult, ToolRefusal } from "./call.js";
import { startAndWait, type ToolExtra, WAIT_DEFAULT_S, WAIT_MAX_S } from "./jobs.js";
import type { TaskTool } from "./tasks.js";

export interface ToolContext {
  call: GatewayCall;
  /** The scopes the caller may act in: its key's (admin aside) or its MCP token's within its tenant's. */
  scopes: readonly McpScope[];
  /** Search and fetch go to the x402 rows when the gateway holds a wallet, else to the credit-billed rows. */
  pays: "x402" | "credits";
  log: (error: string) => void;
}

const id = z.string().min(1).max(256);
const url = z.string().url().max(8192);
/**
 * Every tool's arguments are a closed object (`additionalProperties: false` at every level, test/gateway/mcp-protocol
 * .test.ts walks them): a strict validator in the host sees no open schema, and an argument the tool does not name is
 * refused before anything is sent.
 */
const args = <S extends z.ZodRawShape>(shape: S) => z.strictObject(shape);
const strings = z.array(z.string().max(4096)).max(1000);
/** What a scrape or crawl reads of each page. */
const scrapeOptions = z
  .strictObject({
    formats: z
      .array(z.enum(["markdown", "html", "links", "screenshot"]))
      .max(4)
      .optional(),
    onlyMainContent: z.boolean().optional(),
    includeTags: strings.optional(),
    excludeTags: strings.optional(),
    waitFor: z.number().int().min(0).max(600_000).optional(),
    timeout: z.number().int().min(0).max(600_000).optional(),
  })
  .optional();
/** A sandbox's or browser's network: the operator's egress floor is merged in, and a wider rule is refused. */
const egress = {
  allowInternetAccess: z.boolean().optional(),
  allowOut: strings.optional().describe("Addresses, CIDR ranges or hosts it may reach (within the operator's floor)."),
  denyOut: strings.optional().describe("Addresses, CIDR ranges or hosts it may not reach (added to the operator's floor)."),
};
const wait = z
  .number()
  .int()
  .min(0)
  .max(WAIT_MAX_S)
  .optional()
  .describe(`Seconds to wait for the job to end (default ${WAIT_DEFAULT_S}); 0 returns at once with its id.`);
const enc = encodeURIComponent;

/** A crawl's arguments (the crawl tool, and the crawl run as an MCP task). */
const crawlArgs = {
  url,
  maxPages: z.number().int().min(1).max(1000).optional(),
  followLinks: z.boolean().optional(),
  includePatterns: strings.optional(),
  excludePatterns: strings.optional(),
  scrapeOptions,
  wait,
};
const scrapeArgs = { url, scrapeOptions, wait };
const extractArgs = {
  urls: z.array(url).min(1).max(100),
  prompt: z.string().max(100_000).optional(),
  schema: z
    .string()
    .max(100_000)
    .optional()
    .describe('A JSON Schema for the data, as JSON text (e.g. {"type":"object","properties":{"title":{"type":"string"}}}).'),
  wait,
};
/** An extract's body: its schema argument is JSON text (a closed argument schema cannot hold an open JSON Schema). */
function extractBody(a: Json): Json {
  const { wait: _w, schema, ...named } = a;
  let parsed: unknown;
  if (typeof schema === "string") {
    try {
      parsed = JSON.parse(schema);
    } catch {
      throw new ToolRefusal(400, "invalid_params", "schema: not JSON text.", { field: "schema" });
    }
  }
  return { ...dropUndefined(named), ...dropUndefined({ schema: parsed }) };
}
/** A job's body: its arguments less the tool's own (`wait`, and `agent`, which picks the row). */
function jobBody(a: Json): Json {
  const { wait: _w, agent: _a, ...named } = a;
  return dropUndefined(named);
}
/** An agent task's arguments. */
const taskArgs = {
  agent: z.enum(AGENTS).default("browser-use"),
  task: z.string().min(1).max(100_000),
  maxSteps: z.number().int().min(1).max(1000).optional(),
  llm: z.string().max(128).optional(),
  wait,
};

type Handler<A> = (args: A, extra: ToolExtra) => Promise<CallToolResult>;

/** What one tool is: its description and closed argument schema, and what it does. */
export interface ToolDefinition {
  config: { description: string; inputSchema: z.ZodObject<z.ZodRawShape> };
  handler: Handler<Record<string, unknown>>;
}

/** A tool whose failures are MCP tool errors carrying the gateway's code, never a crash of the session. */
const guardedBy =
  (log: (error: string) => void) =>
  <A>(fn: (args: A, extra: ToolExtra) => Promise<Json>): Handler<A> =>
  async (args, extra) => {
    try {
      return jsonResult(await fn(args, extra));
    } catch (err) {
      return errorResult(err, log);
    }
  };

/**
 * The web tools (the `search` scope): each one request through its row, the x402 row when the gateway holds a wallet.
 * Also what the sales storefront sells (src/sales/mcp.ts), with the same schemas, run as the buyer's wallet tenant.
 */
export function webTools(t: Pick<ToolContext, "call" | "pays" | "log">): Record<"web_search" | "web_fetch", ToolDefinition> {
  const { call } = t;
  const guarded = guardedBy(t.log);
  const prefix = t.pays === "x402" ? "/x402" : "/api";
  return {
    web_search: {
      config: {
        description: `Searches the web; each search is paid (${t.pays === "x402" ? "x402, by the gateway's wallet" : "credits"}) within the caller's budget. Returns result titles, URLs and snippets.`,
        inputSchema: args({ query: z.string().min(1).max(2048), page: z.number().int().min(1).max(1000).optional() }),
      },
      handler: guarded(({ query, page }: { query: string; page?: number }) =>
        call.json("POST", `${prefix}/web/search`, { query, ...dropUndefined({ page }) }),
      ) as Handler<Record<string, unknown>>,
    },
    web_fetch: {
      config: {
        description: `Fetches one web page (paid like a search: ${t.pays}) and returns its content, as markdown by default.`,
        inputSchema: args({ url }),
      },
      handler: guarded(({ url: u }: { url: string }) => call.json("POST", `${prefix}/web/fetch`, { url: u })) as Handler<
        Record<string, unknown>
      >,
    },
  };
}

/** A job tool: its description and arguments, and the start row it sends them to (path and body). */
export interface JobTool {
  config: ToolDefinition["config"];
  path: (a: Json) => string;
  body: (a: Json) => Json;
}

/**
 * The job tools (start a job through its row and wait for it): `scrape`, `crawl`, `extract` (the `jobs` scope) and
 * `agent_task` (`agents`). Also what the sales storefront sells (src/sales/mcp-jobs.ts), with the same schemas.
 */
export function jobTools(): Record<"scrape" | "crawl" | "extract" | "agent_task", JobTool> {
  return {
    scrape: {
      config: {
        description: "Scrapes one page in a real browser and waits for it: markdown, HTML, links or a screenshot (scrapeOptions.formats).",
        inputSchema: args(scrapeArgs),
      },
      path: () => "/api/scrape",
      body: jobBody,
    },
    crawl: {
      config: {
        description:
          "Crawls a site from a URL, following links up to maxPages pages, and waits for it; progress notifications report the job's status while it runs. Credits are reserved for maxPages and settled for the pages crawled.",
        inputSchema: args(crawlArgs),
      },
      path: () => "/api/crawl",
      body: jobBody,
    },
    extract: {
      config: {
        description: "Extracts structured data from pages with a prompt and/or a JSON schema, and waits for it.",
        inputSchema: args(extractArgs),
      },
      path: () => "/api/extract",
      body: extractBody,
    },
    agent_task: {
      config: {
        description:
          "Runs a browser agent on a task and waits for it (progress notifications while it runs). Credits are reserved for maxSteps and settled for the steps taken.",
        inputSchema: args(taskArgs),
      },
      path: (a) => `/api/task/${String(a.agent ?? "browser-use")}`,
      body: jobBody,
    },
  };
}

export function registerTools(server: McpServer, t: ToolContext): void {
  const { call } = t;
  const has = (s: McpScope) => t.scopes.includes(s);
  const guarded = guardedBy(t.log);

  server.registerTool(
    "budget",
    {
      description:
        "What the caller may still spend: the tenant's daily, monthly and total windows (limit, spent, remaining, reset) and, for an MCP token, its own cap and what is left of it.",
      inputSchema: args({}),
    },
    guarded(() => call.json("GET", "/_tollgate/usage")),
  );

  if (has("search")) for (const [name, tool] of Object.entries(webTools(t))) server.registerTool(name, tool.config, tool.handler);

  const jobs = jobTools();
  const job = (tool: JobTool) =>
    guarded<{ wait?: number } & Json>((a, extra) => startAndWait(call, extra, tool.path(a), tool.body(a), a.wait ?? WAIT_DEFAULT_S));
  if (has("jobs"))
    for (const name of ["scrape", "crawl", "extract"] as const) server.registerTool(name, jobs[name].config, job(jobs[name]));
  if (has("agents")) server.registerTool("agent_task", jobs.agent_task.config, job(jobs.agent_task));

  if (has("jobs") || has("agents")) {
    const families = [...(has("jobs") ? ["scrape", "crawl", "extract"] : []), ...(has("agents") ? AGENTS.map((a) => `task/${a}`) : [])];
    server.registerTool(
      "job_result",
      {
        description: "Reads a job started by scrape, crawl, extract or agent_task (its status and, once ended, its data).",
        inputSchema: args({ family: z.enum(families as [string, ...string[]]), jobId: id }),
      },
      guarded(({ family, jobId }) => call.json("GET", `/api/${family}/${enc(jobId)}`)),
    );
  }

  if (has("sessions")) registerSessionTools(server, call, guarded, (err) => errorResult(err, t.log));
  if (has("sandboxes")) registerSandboxTools(server, call, guarded);
}

/**
 * The tools that may run as MCP tasks (./tasks.ts), for the caller's scopes: each names its job row, its arguments and
 * the body it sends (the same as the waiting tool's).
 */
export function taskTools(scopes: readonly McpScope[]): Record<string, TaskTool> {
  const out: Record<string, TaskTool> = {};
  if (scopes.includes("jobs")) {
    out.scrape = { family: () => "scrape", schema: args(scrapeArgs), body: jobBody };
    out.crawl = { family: () => "crawl", schema: args(crawlArgs), body: jobBody };
    out.extract = { family: () => "extract", schema: args(extractArgs), body: extractBody };
  }
  if (scopes.includes("agents")) out.agent_task = { family: (a) => `task/${String(a.agent)}`, schema: args(taskArgs), body: jobBody };
  return out;
}

type Guard = <A>(fn: (args: A, extra: ToolExtra) => Promise<Json>) => Handler<A>;

function registerSessionTools(server: McpServer, call: GatewayCall, guarded: Guard, failed: (err: unknown) => CallToolResult): void {
  server.registerTool(
    "browser_create",
    {
      description:
        "Starts a remote browser session (billed by the minute up to timeoutMinutes). Returns its id, wsEndpoint (a CDP URL on the gateway, for puppeteer.connect or Playwright connectOverCDP) and liveUrl.",
      inputSchema: args({
        timeoutMinutes: z
          .number()
          .positive()
          .max(24 * 60)
          .optional(),
        useStealth: z.boolean().optional(),
        useProxy: z.boolean().optional(),
        proxyCountry: z.string().max(8).optional(),
        solveCaptchas: z.boolean().optional(),
        adblock: z.boolean().optional(),
        region: z.string().max(64).optional(),
        ...egress,
      }),
    },
    guarded(async (named) => {
      const s = await call.json("POST", "/api/session", dropUndefined(named));
      return pick(s, ["id", "status", "wsEndpoint", "liveUrl", "computerActionEndpoint", "sessionUrl", "startTime", "endTime"]);
    }),
  );
  server.registerTool(
    "browser_action",
    {
      description:
        "One computer action in a session: click, type_text, press_keys, move_mouse, drag, scroll, screenshot… A screenshot (or returnScreenshot) comes back as image content.",
      inputSchema: args({
        sessionId: id,
        action: z.enum([
          "click",
          "type_text",
          "press_keys",
          "move_mouse",
          "drag",
          "scroll",
          "screenshot",
          "hold_key",
          "mouse_down",
          "mouse_up",
          "get_clipboard_text",
          "put_selection_text",
          "list_windows",
        ]),
        x: z.number().optional(),
        y: z.number().optional(),
        text: z.string().max(100_000).optional(),
        keys: z.array(z.string().max(64)).max(100).optional(),
        key: z.string().max(64).optional().describe("hold_key: the key."),
        duration: z.number().min(0).max(60_000).optional().describe("hold_key: milliseconds."),
        scrollX: z.number().optional(),
        scrollY: z.number().optional(),
        button: z.string().max(16).optional(),
        numClicks: z.number().int().min(1).max(10).optional(),
        path: z
          .array(z.strictObject({ x: z.number(), y: z.number() }))
          .max(10_000)
          .optional()
          .describe("drag: the points."),
        returnScreenshot: z.boolean().optional(),
      }),
    },
    async ({ sessionId, ...named }) => {
      try {
        const r = await call.json("POST", `/_tollgate/computer-action/${enc(sessionId)}`, dropUndefined(named));
        const { screenshot, ...rest } = r;
        const result = jsonResult(rest);
        if (typeof screenshot === "string" && screenshot)
          result.content.unshift({ type: "image", data: screenshot, mimeType: "image/png" });
        return result;
      } catch (err) {
        return failed(err);
      }
    },
  );
  server.registerTool(
    "browser_stop",
    { description: "Stops a browser session; its minutes are settled.", inputSchema: args({ sessionId: id }) },
    guarded(({ sessionId }) => call.json("PUT", `/api/session/${enc(sessionId)}/stop`)),
  );
}

function registerSandboxTools(server: McpServer, call: GatewayCall, guarded: Guard): void {
  /** The sandbox's own gateway token (the runtime plane takes no tenant credential), read through its get row. */
  const runtime = async (sandboxId: string, method: string, rest: string, body?: Json) => {
    const sb = await call.json("GET", `/api/sandbox/${enc(sandboxId)}`);
    if (typeof sb.token !== "string") return call.json(method, `/sandbox/${enc(sandboxId)}${rest}`, body); // refused as not running
    return call.json(method, `/sandbox/${enc(sandboxId)}${rest}`, body, sb.token);
  };
  const sandboxId = id.describe("The sandbox's id (from sandbox_create).");
  const path = z.string().min(1).max(4096);

  server.registerTool(
    "sandbox_create",
    {
      description:
        "Creates a sandbox (a Linux VM, billed by the minute up to timeoutMinutes) from an image (imageName) or from one of your snapshots (snapshotName). Returns its id and status.",
      inputSchema: args({
        imageName: z.string().min(1).max(256).optional(),
        snapshotName: z.string().min(1).max(256).optional().describe("Start from this snapshot of yours instead of an image."),
        timeoutMinutes: z
          .number()
          .positive()
          .max(24 * 60)
          .optional(),
        region: z.string().max(64).optional(),
        ...egress,
      }),
    },
    guarded(async (named) => {
      const s = await call.json("POST", "/api/sandbox", dropUndefined(named));
      return pick(s, ["id", "status", "region", "imageName", "startTime", "endTime", "timeoutMinutes"]);
    }),
  );
  server.registerTool(
    "sandbox_exec",
    {
      description: "Runs a shell command in a sandbox and returns its exit code, stdout and stderr.",
      inputSchema: args({
        sandboxId,
        command: z.string().min(1).max(100_000),
        cwd: z.string().max(4096).optional(),
        timeoutMs: z.number().int().positive().max(600_000).optional(),
      }),
    },
    guarded(({ sandboxId: s, ...named }) => runtime(s, "POST", "/exec", dropUndefined(named))),
  );
  server.registerTool(
    "sandbox_read_file",
    { description: "Reads a text file in a sandbox.", inputSchema: args({ sandboxId, path }) },
    guarded(({ sandboxId: s, path: p }) => runtime(s, "POST", "/files/read", { path: p, encoding: "utf8" })),
  );
  server.registerTool(
    "sandbox_write_file",
    {
      description: "Writes a text file in a sandbox (created or replaced).",
      inputSchema: args({ sandboxId, path, content: z.string().max(512 * 1024), append: z.boolean().optional() }),
    },
    guarded(({ sandboxId: s, path: p, content, append }) =>
      runtime(s, "POST", "/files/write", { path: p, data: content, encoding: "utf8", ...dropUndefined({ append }) }),
    ),
  );
  server.registerTool(
    "sandbox_list_files",
    {
      description: "Lists a directory in a sandbox (depth 1 by default).",
      inputSchema: args({ sandboxId, path, depth: z.number().int().min(1).max(10).optional() }),
    },
    guarded(({ sandboxId: s, path: p, depth }) =>
      runtime(s, "GET", `/files?${new URLSearchParams({ path: p, depth: String(depth ?? 1) })}`),
    ),
  );
  server.registerTool(
    "sandbox_stop",
    { description: "Stops a sandbox; its minutes are settled.", inputSchema: args({ sandboxId }) },
    guarded(({ sandboxId: s }) => call.json("PUT", `/api/sandbox/${enc(s)}/stop`)),
  );
}

function dropUndefined(o: Json): Json {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

function pick(o: Json, keys: string[]): Json {
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
}
