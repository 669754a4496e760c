// Long jobs as MCP tasks (the 2025-11-25 tasks utility): a `tools/call` of scrape, crawl, extract or agent_task that
// carries `task` starts the job through its start row and answers at once with a task; `tasks/get`, `tasks/result`,
// `tasks/list` and `tasks/cancel` read it through the job's status, get and stop rows. The task IS the job: its id
// names the job's family and id, nothing is kept but a short list of the caller's task ids, and any instance answers.
// The rows check the owner (another tenant's task id is the job rows' 404: "not found"), reserve and settle credits,
// exactly as for HTTP.
import type { TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, CreateTaskResult, Result, Task } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type * as z from "zod";
import type { KeyValueStore } from "../state/types.js";
import { errorResult, type GatewayCall, type Json, jsonResult, ToolRefusal } from "./call.js";

/** How often a client is asked to poll a task (ms). */
const POLL_MS = 1000;
/** The caller's task ids kept for tasks/list (newest first), and for how long. */
const LISTED = 20;
const LIST_TTL_MS = 7 * 86_400_000;
const listKey = (tenant: string) => `mcp:tasks:${tenant}`;

/** A tool that may run as a task: the job row it starts and the arguments it takes. */
export interface TaskTool {
  /** `/api/<family>`: crawl, scrape, extract, or task/<agent>. */
  family: (args: Json) => string;
  schema: z.ZodType;
  body: (args: Json) => Json;
}

interface TaskRef {
  /** The job row's family: crawl, scrape, extract, task/browser-use… */
  f: string;
  /** The job's id. */
  j: string;
  /** When the task was created (epoch ms). */
  t: number;
}

const FAMILY = /^(scrape|crawl|extract|task\/[a-z-]{1,40})$/;

const b64url = (s: string) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(s)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
function unb64url(s: string): string {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  return new TextDecoder().decode(Uint8Array.from(bin, (ch) => ch.charCodeAt(0)));
}

const encodeTaskId = (ref: TaskRef) => b64url(JSON.stringify(ref));

/** The job a task id names; undefined for anything that is not one of these ids (answered as not found). */
function decodeTaskId(id: string): TaskRef | undefined {
  if (id.length > 1024 || !/^[A-Za-z0-9_-]+$/.test(id)) return undefined;
  try {
    const ref = JSON.parse(unb64url(id)) as TaskRef;
    if (typeof ref.f !== "string" || !FAMILY.test(ref.f) || typeof ref.j !== "string" || !ref.j || typeof ref.t !== "number")
      return undefined;
    return ref;
  } catch {
    return undefined;
  }
}

/** A job's status as a task's. */
function taskStatus(status: string): Task["status"] {
  if (status === "completed") return "completed";
  if (status === "failed" || status === "timed_out") return "failed";
  if (status === "stopped" || status === "cancelled") return "cancelled";
  return "working";
}

const notFound = (id: string) => new McpError(ErrorCode.InvalidParams, `Task not found: ${id}`);

/**
 * The task store of one MCP request: each method is a request through a job row with the caller's credential.
 * `tenant` keys the caller's list of recent task ids.
 */
export class JobTaskStore implements TaskStore {
  constructor(
    private readonly call: GatewayCall,
    private readonly kv: KeyValueStore,
    private readonly tenant: string,
    private readonly now: () => number,
  ) {}

  private task(ref: TaskRef, id: string, status: string, message?: string): Task {
    const at = new Date(ref.t).toISOString();
    return {
      taskId: id,
      status: taskStatus(status),
      ttl: null,
      createdAt: at,
      lastUpdatedAt: new Date(this.now()).toISOString(),
      pollInterval: POLL_MS,
      ...(message ? { statusMessage: message } : {}),
    };
  }

  /** Starts the job and answers the task (the tools/call of a task tool with `task`). */
  async start(family: string, body: Json): Promise<CreateTaskResult> {
    const started = await this.call.json("POST", `/api/${family}`, body);
    const jobId = String(started.jobId ?? started.id ?? "");
    if (!jobId) throw new ToolRefusal(502, "upstream_bad_response", "The job was started without an id.");
    const ref: TaskRef = { f: family, j: jobId, t: this.now() };
    const id = encodeTaskId(ref);
    await this.remember(id);
    return { task: this.task(ref, id, String(started.status ?? "pending")) };
  }

  private async remember(id: string): Promise<void> {
    const ids = await this.listed();
    await this.kv.set(listKey(this.tenant), JSON.stringify([id, ...ids.filter((x) => x !== id)].slice(0, LISTED)), LIST_TTL_MS);
  }

  private async listed(): Promise<string[]> {
    const raw = await this.kv.get(listKey(this.tenant));
    try {
      const ids = raw ? (JSON.parse(raw) as unknown) : [];
      return Array.isArray(ids) ? ids.filter((x): x is string => typeof x === "string") : [];
    } catch {
      return [];
    }
  }

  /** The job's status row; null when the row answers 404 (not the caller's, or no such job). */
  async getTask(taskId: string): Promise<Task | null> {
    const ref = decodeTaskId(taskId);
    if (!ref) return null;
    try {
      const st = await this.call.json("GET", `/api/${ref.f}/${encodeURIComponent(ref.j)}/status`);
      return this.task(ref, taskId, String(st.status ?? "pending"), typeof st.error === "string" ? st.error : undefined);
    } catch (err) {
      if (err instanceof ToolRefusal && err.status === 404) return null;
      throw err;
    }
  }

  /** The job's get row, as the tool's answer would have been. */
  async getTaskResult(taskId: string): Promise<Result> {
    const ref = decodeTaskId(taskId);
    if (!ref) throw notFound(taskId);
    try {
      const job = await this.call.json("GET", `/api/${ref.f}/${encodeURIComponent(ref.j)}`);
      return jsonResult({ jobId: ref.j, ...job, done: true }) as Result;
    } catch (err) {
      if (err instanceof ToolRefusal && err.status === 404) throw notFound(taskId);
      return errorResult(err, () => {}) as Result;
    }
  }

  /** Tasks are started by their tools (`start`); no other request runs as one. */
  async createTask(): Promise<Task> {
    throw new McpError(ErrorCode.InvalidParams, "Only scrape, crawl, extract and agent_task run as tasks.");
  }

  /** Results live upstream, with the job: nothing to store. */
  async storeTaskResult(): Promise<void> {}

  /** Cancelling stops an agent task through its stop row; a scrape, crawl or extract has none. */
  async updateTaskStatus(taskId: string, status: Task["status"]): Promise<void> {
    const ref = decodeTaskId(taskId);
    if (!ref) throw notFound(taskId);
    if (status !== "cancelled") return;
    if (!ref.f.startsWith("task/"))
      throw new McpError(ErrorCode.InvalidParams, `A ${ref.f} job cannot be cancelled: it runs until it ends (at most its maxPages).`);
    await this.call.json("PUT", `/api/${ref.f}/${encodeURIComponent(ref.j)}/stop`);
  }

  /** The caller's recent tasks (newest first), each read through its status row. */
  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    if (cursor !== undefined) return { tasks: [] };
    const tasks: Task[] = [];
    for (const id of await this.listed()) {
      const t = await this.getTask(id).catch(() => null);
      if (t) tasks.push(t);
    }
    return { tasks };
  }
}

/** Handlers of the SDK's server as its Protocol keeps them (the SDK offers no getter for one already set). */
type RawHandler = (request: { method: string; params?: Record<string, unknown> }, extra: unknown) => Promise<unknown>;

/**
 * Lets the task tools run as tasks: tools/list says `taskSupport: "optional"` for them, and a tools/call of one that
 * carries `task` starts the job and answers the task. Every other call goes to the SDK's handler unchanged (a task
 * tool called without `task` starts and waits, with progress notifications, as before).
 */
export function offerTasks(server: McpServer, store: JobTaskStore, tools: Record<string, TaskTool>, log: (error: string) => void): void {
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, RawHandler> })._requestHandlers;
  const list = handlers.get("tools/list");
  const call = handlers.get("tools/call");
  if (!list || !call) throw new Error("mcp: tools must be registered before tasks are offered");
  handlers.set("tools/list", async (request, extra) => {
    const answer = (await list(request, extra)) as { tools: Array<{ name: string; execution?: Record<string, unknown> }> };
    for (const t of answer.tools) if (tools[t.name]) t.execution = { ...t.execution, taskSupport: "optional" };
    return answer;
  });
  handlers.set("tools/call", async (request, extra) => {
    const params = request.params ?? {};
    const tool = typeof params.name === "string" ? tools[params.name] : undefined;
    if (!tool || !params.task) return call(request, extra);
    const parsed = tool.schema.safeParse(params.arguments ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return {
        isError: true,
        content: [{ type: "text", text: `Input validation error: ${issue.path.join(".") || "arguments"}: ${issue.message}` }],
      } satisfies CallToolResult;
    }
    const args = parsed.data as Json;
    try {
      return await store.start(tool.family(args), tool.body(args));
    } catch (err) {
      // No task was made: a JSON-RPC error carrying the gateway's refusal (a client awaiting a task reads errors, not
      // tool results), e.g. policy_denied or token_cap_exceeded with its figures.
      const refusal = errorResult(err, log).structuredContent?.error as Json & { code: string; message: string };
      throw new McpError(ErrorCode.InvalidRequest, `${refusal.code}: ${refusal.message}`, refusal);
    }
  });
}
