// Runtime routes for PTY terminals (the WebSocket attach lives in upgrades.ts).
import { Hono } from "hono";
import { ApiError } from "./errors.js";
import { body, type RuntimeEnv } from "./runtime-env.js";
import { TerminalTable, type Terminal } from "./terminals.js";

/** A boolean query parameter as every SDK writes it: `true` (Node) or `True` (Python), any case. */
const queryFlag = (raw: string | undefined) => raw?.toLowerCase() === "true";

async function waitTerminal(t: Terminal, timeoutMs: number | undefined): Promise<void> {
  if (!t.running) return t.done;
  if (!timeoutMs) return t.done;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      t.done,
      new Promise<never>(
        (_, reject) =>
          (timer = setTimeout(
            () => reject(new ApiError(408, "timeout", `Terminal ${t.id} wait timed out after ${timeoutMs} ms`)),
            timeoutMs,
          )),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function terminalRoutes(): Hono<RuntimeEnv> {
  const app = new Hono<RuntimeEnv>();
  app.post("/pty", async (c) => c.json({ pty: c.var.sandbox.terminals.create(await body(c)).status(false) }));
  app.get("/pty/:tid", (c) =>
    c.json({ pty: c.var.sandbox.terminals.get(c.req.param("tid")).status(queryFlag(c.req.query("includeOutput"))) }),
  );
  app.post("/pty/:tid/wait", async (c) => {
    const t = c.var.sandbox.terminals.get(c.req.param("tid"));
    const b = await body(c);
    await waitTerminal(t, typeof b.timeoutMs === "number" && b.timeoutMs > 0 ? b.timeoutMs : undefined);
    return c.json({ pty: t.status(Boolean(b.includeOutput)) });
  });
  app.post("/pty/:tid/kill", async (c) => {
    const t = c.var.sandbox.terminals.get(c.req.param("tid"));
    t.signal(TerminalTable.parseSignal((await body(c)).signal));
    return c.json({ pty: t.status(false) });
  });
  app.post("/pty/:tid/resize", async (c) => {
    const t = c.var.sandbox.terminals.get(c.req.param("tid"));
    const b = await body(c);
    t.resize(Number(b.rows), Number(b.cols));
    return c.json({ pty: t.status(false) });
  });
  return app;
}
