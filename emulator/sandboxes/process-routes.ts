// Runtime routes for exec and processes, including the SSE output stream with from_seq replay.
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { badRequest } from "./errors.js";
import { parseSignal, timeoutOf, waitFor, type ProcessEvent } from "./processes.js";
import { body, Queue, type RuntimeEnv } from "./runtime-env.js";

export function processRoutes(): Hono<RuntimeEnv> {
  const app = new Hono<RuntimeEnv>();

  app.post("/exec", async (c) => {
    const proc = c.var.sandbox.processes.start(await body(c));
    await proc.done;
    return c.json({ result: proc.result() });
  });

  app.post("/processes", async (c) => c.json({ process: c.var.sandbox.processes.start(await body(c)).summary() }));
  app.get("/processes", (c) => c.json(c.var.sandbox.processes.list(c.req.query())));
  app.get("/processes/:pid", (c) => c.json({ process: c.var.sandbox.processes.get(c.req.param("pid")).summary() }));

  app.post("/processes/:pid/wait", async (c) => {
    const proc = c.var.sandbox.processes.get(c.req.param("pid"));
    await waitFor(proc, timeoutOf(await body(c)));
    return c.json({ result: proc.result() });
  });

  app.post("/processes/:pid/signal", async (c) => {
    const proc = c.var.sandbox.processes.get(c.req.param("pid"));
    proc.signal(parseSignal((await body(c)).signal, "SIGTERM"));
    return c.json({ process: proc.summary() });
  });

  app.delete("/processes/:pid", (c) => {
    const proc = c.var.sandbox.processes.get(c.req.param("pid"));
    proc.signal("SIGKILL");
    return c.json({ process: proc.summary() });
  });

  app.post("/processes/:pid/stdin", async (c) => {
    const proc = c.var.sandbox.processes.get(c.req.param("pid"));
    const b = await body(c);
    if (b.data !== undefined && typeof b.data !== "string") throw badRequest("data must be a string");
    const data = b.data === undefined ? undefined : Buffer.from(b.data, b.encoding === "base64" ? "base64" : "utf8");
    proc.writeStdin(data, Boolean(b.eof));
    return c.json({ success: true });
  });

  app.get("/processes/:pid/stream", (c) => {
    const proc = c.var.sandbox.processes.get(c.req.param("pid"));
    const fromSeq = Math.max(1, Number.parseInt(c.req.query("from_seq") ?? "1", 10) || 1);
    // Replay and subscription happen in one synchronous step, so no chunk is lost or sent twice.
    const queue = new Queue<ProcessEvent>();
    for (const chunk of proc.replay(fromSeq)) queue.push({ type: "output", chunk });
    const unsubscribe = proc.running ? proc.subscribe((e) => queue.push(e)) : () => {};
    if (!proc.running) queue.push({ type: "done" });
    return streamSSE(c, async (sse) => {
      const keepalive = setInterval(() => void sse.write(": keepalive\n\n").catch(() => {}), 15_000);
      sse.onAbort(() => (unsubscribe(), queue.close()));
      try {
        for (let e = await queue.next(); e; e = await queue.next()) {
          if (e.type === "output") {
            await sse.writeSSE({ event: "output", id: String(e.chunk.seq), data: JSON.stringify(e.chunk) });
          } else {
            await sse.writeSSE({ event: "done", data: JSON.stringify(proc.result()) });
            break;
          }
        }
      } finally {
        clearInterval(keepalive);
        unsubscribe();
      }
    });
  });

  return app;
}
