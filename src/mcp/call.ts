// No second path: an MCP tool call is an HTTP request through the gateway's own app (services.dispatch), matched by the
// route table's row and run through the same chain as a client's (identify, scope, rate limit, owner, body, quota,
// meter), with the caller's credential. This turns a tool's request into that request, and a refusal into a tool error.
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";

/** A tool answer larger than this is cut (an agent's context is the limit; the job's id lets it read the rest). */
const TEXT_LIMIT = 200_000;

const FORWARDED = ["x-forwarded-for", "x-forwarded-host", "x-forwarded-proto"];

/** The gateway refused (or the upstream failed) a tool's request: its status, code, message and figures. */
export class ToolRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly figures: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export type Json = Record<string, unknown>;

/** Sends a tool's requests as the MCP caller, through the gateway's own rows. */
export class GatewayCall {
  private sent = 0;

  constructor(
    private readonly services: GatewayServices,
    private readonly c: Context<GatewayEnv>,
    /** The caller's tenant key or MCP token, sent as `Authorization: Bearer`. */
    private readonly credential: string,
  ) {}

  /**
   * One request through the gateway; its JSON answer, or a ToolRefusal carrying the gateway's code. `bearer` replaces
   * the caller's credential where a row takes another (the runtime plane takes the sandbox's own gateway token).
   */
  async json(method: string, path: string, body?: unknown, bearer = this.credential): Promise<Json> {
    if (!this.services.dispatch) throw new ToolRefusal(503, "unavailable", "The gateway cannot run tools now.");
    const headers = new Headers({ authorization: `Bearer ${bearer}`, accept: "application/json" });
    // Behind a trusted proxy, the client's address and public origin are read from these: the same for a tool's request.
    for (const name of FORWARDED) {
      const v = this.c.req.header(name);
      if (v) headers.set(name, v);
    }
    if (body !== undefined) headers.set("content-type", "application/json");
    const id = this.c.get("requestId");
    if (id) headers.set("x-request-id", `${id}.mcp${++this.sent}`);
    const url = new URL(path, new URL(this.c.req.url).origin);
    const res = await this.services.dispatch(
      new Request(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }),
      this.c,
    );
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      json = { text };
    }
    const answer = (json && typeof json === "object" && !Array.isArray(json) ? json : { data: json }) as Json;
    if (res.ok) return answer;
    throw refusalOf(this.services, res.status, answer);
  }
}

/**
 * A refusal from a tool request's answer: the gateway's own `{message, code}` where the gateway refused, else the
 * upstream's own words as it sent them (`message`, or `error`, or a text body) and its `code` (or `http_<status>`) —
 * with every secret the gateway holds, and the upstream's hosts, scrubbed from them first.
 */
function refusalOf(services: GatewayServices, status: number, answer: Json): ToolRefusal {
  const { message, code, ...rest } = answer;
  let said: unknown = message;
  for (const field of ["error", "text"] as const) {
    const v = rest[field];
    if (typeof said === "string" && said.trim()) break;
    if (typeof v === "string" && v.trim()) {
      said = v;
      delete rest[field];
    }
  }
  const scrub = upstreamScrubber(services);
  const figures: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(rest)) figures[k] = typeof v === "string" ? scrub(v) : v;
  return new ToolRefusal(
    status,
    typeof code === "string" && code ? scrub(code) : `http_${status}`,
    typeof said === "string" && said.trim() ? scrub(said.trim().slice(0, 2000)) : `The gateway answered ${status}.`,
    figures,
  );
}

/** Scrubs a text the upstream wrote: the gateway's secrets (the log redactor's) and the upstream's host names. */
function upstreamScrubber(services: GatewayServices): (s: string) => string {
  const { baseUrl, allowedHosts } = services.config.upstream;
  const { host, hostname } = new URL(baseUrl);
  // A bare name is scrubbed too (api.example.com), not a loopback or IP address a message may name for its own reasons.
  const named = /^(localhost|[\d.]+|\[[\da-f:]+\])$/i.test(hostname) ? [] : [hostname];
  const hosts = [host, ...named, ...allowedHosts].filter((h) => h.length > 0);
  hosts.sort((a, b) => b.length - a.length);
  return (s) => {
    let out = services.logger.redactor.text(s);
    for (const h of hosts) if (out.includes(h)) out = out.split(h).join("upstream");
    return out;
  };
}

/** A tool's JSON answer as text content (and structured content, for clients that read it). */
export function jsonResult(value: Json): CallToolResult {
  let text = JSON.stringify(value, null, 2);
  if (text.length > TEXT_LIMIT) text = `${text.slice(0, TEXT_LIMIT)}\n… (cut at ${TEXT_LIMIT} characters)`;
  return { content: [{ type: "text", text }], structuredContent: value };
}

/** A refusal as an MCP tool error: the gateway's code, message, HTTP status and figures, as a client would see them. */
export function errorResult(err: unknown, log: (error: string) => void): CallToolResult {
  let error: Json;
  if (err instanceof ToolRefusal) error = { code: err.code, message: err.message, status: err.status, ...err.figures };
  else if (err instanceof GatewayError) error = { code: err.code, message: err.message, status: err.status, ...err.details };
  else {
    log(String((err as Error)?.stack ?? err));
    error = { code: "tool_failed", message: "The tool failed inside the gateway; nothing more is said here.", status: 500 };
  }
  return { isError: true, content: [{ type: "text", text: JSON.stringify(error) }], structuredContent: { error } };
}
