// Agent tasks on the emulator: the scripted agent of every family runs in a real browser session; stop works mid-run.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import puppeteer from "puppeteer-core";
import { SearchEngine } from "../../emulator/search/engine.js";
import { AGENT_FAMILIES, type AgentFamily } from "../../emulator/jobs/index.js";
import { SITE, startJobsEmulator, watch, type JobsEmulator } from "./jobs-harness.js";

let h: JobsEmulator;
beforeAll(async () => {
  h = await startJobsEmulator();
});
afterAll(async () => {
  await h?.close();
});

type AnyTask = {
  start(p: any): Promise<{ jobId: string; liveUrl: string | null }>;
  startAndWait(p: any): Promise<any>;
  getStatus(id: string): Promise<{ status: string }>;
  get(id: string): Promise<any>;
  stop(id: string): Promise<{ success: boolean }>;
};

function service(family: AgentFamily): AnyTask {
  const a = h.client.agents as unknown as Record<string, AnyTask>;
  const key = {
    "browser-use": "browserUse",
    "claude-computer-use": "claudeComputerUse",
    "gemini-computer-use": "geminiComputerUse",
    "grok-computer-use": "grokComputerUse",
    "meta-computer-use": "metaComputerUse",
    cua: "cua",
    "hyper-agent": "hyperAgent",
  }[family];
  return a[key];
}

const TASK = `Open ${SITE}/about and then ${SITE}/products, and tell me their titles.`;

describe.concurrent("agent tasks", () => {
  it.each(AGENT_FAMILIES)(
    "%s: startAndWait visits the URLs of the task in a session of its own and reports steps and a final answer",
    async (family) => {
      const result = await service(family).startAndWait({ task: TASK });
      expect(result).toMatchObject({ status: "completed", error: null, liveUrl: null });
      expect(result.data.steps).toHaveLength(3); // two visits and the answer
      expect(result.data.finalResult).toBe(`Visited 2 pages: "About Emulator Outfitters" (${SITE}/about); "Products" (${SITE}/products)`);
      expect(result.metadata.numTaskStepsCompleted).toBe(3);
      // Each family writes its steps in its own shape, naming the URL it opened.
      expect(JSON.stringify(result.data.steps[0])).toContain(`${SITE}/about`);
      if (family === "browser-use") expect(result.data.steps[1].state).toMatchObject({ url: `${SITE}/products`, title: "Products" });
      if (family === "claude-computer-use")
        expect(result.data.steps[0]).toMatchObject({ role: "assistant", type: "message", stop_reason: "tool_use" });
      if (family === "hyper-agent")
        expect(result.data.steps[0].agentOutput.actions[0]).toEqual({
          type: "goToUrl",
          params: { url: `${SITE}/about`, title: "About Emulator Outfitters" },
        });
      // The session it ran in was a real one, and it is closed once the task ends.
      const job = h.jobs.store.get(`task/${family}`, result.jobId)!;
      await h.jobs.store.settled(job.id);
      expect(h.sessions.get(job.sessionId!)?.status).toBe("closed");
    },
  );

  it.each(AGENT_FAMILIES)("%s: stop ends a running task at once, as stopped", async (family) => {
    const svc = service(family);
    const { jobId, liveUrl } = await svc.start({ task: `Visit ${SITE}/slow?ms=20000 and report.` });
    expect(liveUrl).toBeNull();
    await watch(
      () => svc.getStatus(jobId).then((r) => r.status),
      (s) => s === "running",
      45_000,
    );
    const started = Date.now();
    expect(await svc.stop(jobId)).toEqual({ success: true });
    expect((await svc.getStatus(jobId)).status).toBe("stopped");
    expect(Date.now() - started).toBeLessThan(5_000);
    await h.jobs.store.settled(jobId);
    expect(h.jobs.store.get(`task/${family}`, jobId)!.history).toEqual(["pending", "running", "stopped"]);
    expect(await svc.stop(jobId)).toEqual({ success: true }); // stopping again changes nothing
    expect((await svc.get(jobId)).status).toBe("stopped");
  });

  it("runs in the session given by sessionId, which stays open with keepBrowserOpen", async () => {
    const session = await h.client.sessions.create();
    const result = await service("browser-use").startAndWait({
      task: `Go to ${SITE}/products/headlamp`,
      sessionId: session.id,
      keepBrowserOpen: true,
    });
    expect(result.data.finalResult).toContain('"Ridge Headlamp"');
    expect((await h.client.sessions.get(session.id)).status).toBe("active");
    const browser = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint });
    const urls = (await browser.pages()).map((p) => p.url());
    await browser.disconnect();
    expect(urls).toContain(`${SITE}/products/headlamp`);
    await h.client.sessions.stop(session.id);
    expect(await h.api("POST", "/api/task/cua", { task: TASK, sessionId: "no-such-session" })).toMatchObject({
      status: 400,
      body: { message: expect.stringContaining("sessionId") },
    });
  });

  it("a task naming no URL visits the local web's best search results; outputModelSchema shapes the answer", async () => {
    const searched = await service("cua").startAndWait({ task: "Find out how roman aqueducts carried water", maxSteps: 3 });
    expect(searched.status).toBe("completed");
    expect(searched.data.steps).toHaveLength(3);
    const top = new SearchEngine().search({ query: "Find out how roman aqueducts carried water" });
    expect(top.ok && top.results.length >= 2).toBe(true);
    for (const r of top.ok ? top.results.slice(0, 2) : []) expect(searched.data.finalResult).toContain(`(${r.url})`);
    const shaped = await service("browser-use").startAndWait({
      task: `Open ${SITE}/about`,
      outputModelSchema: { type: "object", properties: { company: { type: "string" }, founded: { type: "integer" } } },
    });
    expect(JSON.parse(shaped.data.finalResult)).toEqual({ company: "Emulator Outfitters", founded: 1998 });
  });

  it("answers 404 for unknown task ids on get, status and stop, and 400 for an empty task", async () => {
    for (const [method, path] of [
      ["GET", "/api/task/cua/nope"],
      ["GET", "/api/task/hyper-agent/nope/status"],
      ["PUT", "/api/task/browser-use/nope/stop"],
    ]) {
      expect(await h.api(method, path)).toEqual({ status: 404, body: { message: "Task not found", code: "not_found" } });
    }
    const { jobId } = await service("cua").start({ task: `Open ${SITE}/` });
    expect((await h.api("GET", `/api/task/browser-use/${jobId}`)).status).toBe(404); // a cua task is not a browser-use task
    expect(await h.api("POST", "/api/task/grok-computer-use", { task: " " })).toMatchObject({
      status: 400,
      body: { code: "invalid_request" },
    });
  });
});
