// The scripted agent (no language model): in a real browser session it opens the URLs the task names, then reports.
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import type { BrowserSessions } from "../sessions/session-service.js";
import type { SearchEngine } from "../search/engine.js";
import type { LocalWeb } from "../web/index.js";
import { formatStep, type AgentFamily, type AgentStep } from "./agent-steps.js";
import { extractWithSchema } from "./extract-rules.js";
import type { StartTask } from "./job-params.js";
import type { Job } from "./job-store.js";
import { routeToLocalWeb } from "./local-routing.js";
import { navigate } from "./page-job.js";
import { readStructure, type PageStructure } from "./page-structure.js";

export interface AgentDeps {
  sessions: BrowserSessions;
  web: LocalWeb;
  engine: SearchEngine;
}

const DEFAULT_MAX_STEPS = 10;

/**
 * The URLs a task names, in order: absolute http(s) URLs, and bare `host/path` names of hosts on the local web.
 * A task that names none is searched for on the local corpus and its top results are visited.
 */
export function urlsInTask(task: string, web: LocalWeb, engine: SearchEngine): string[] {
  const found: string[] = [];
  const add = (u: string) => {
    const clean = u.replace(/[.,;:!?'")\]]+$/, "");
    if (!found.includes(clean)) found.push(clean);
  };
  for (const m of task.matchAll(/https?:\/\/[^\s"'<>]+/g)) add(m[0]);
  const rest = task.replace(/https?:\/\/[^\s"'<>]+/g, " ");
  for (const m of rest.matchAll(/\b((?:[a-z0-9-]+\.)+[a-z]{2,})(\/[^\s"'<>]*)?/gi))
    if (web.site.knows(m[1])) add(`https://${m[1]}${m[2] ?? "/"}`.replace("https://web.emulator.test", "http://web.emulator.test"));
  if (found.length) return found;
  const hits = engine.search({ query: task.slice(0, 500) });
  return hits.ok ? hits.results.slice(0, 3).map((r) => r.url) : [];
}

export function agentRunner(family: AgentFamily, deps: AgentDeps) {
  return async (job: Job<StartTask>) => {
    const p = job.params;
    const urls = urlsInTask(p.task, deps.web, deps.engine);
    if (urls.length === 0) throw new Error("The task names no URL and no page on the local web matches it");
    const maxSteps = p.maxSteps ?? DEFAULT_MAX_STEPS;
    const steps: AgentStep[] = [];
    const publish = (finalResult: string | null) => {
      job.data = { steps: steps.map((s) => formatStep(family, s, { llm: p.llm, version: p.version })), finalResult };
      job.metadata =
        family === "hyper-agent"
          ? { numTaskStepsCompleted: steps.length }
          : { inputTokens: null, outputTokens: null, numTaskStepsCompleted: steps.length };
    };
    publish(null);

    let sessionId = p.sessionId;
    const created = !sessionId;
    if (!sessionId) sessionId = String((await deps.sessions.create(p.sessionOptions ?? {}, { unbilled: true })).id);
    job.sessionId = sessionId;
    let browser: Browser | undefined;
    let page: Page | undefined;
    const onStop = () => void page?.close().catch(() => {});
    job.signal.addEventListener("abort", onStop);
    try {
      const record = deps.sessions.record(sessionId);
      if (record?.status !== "active" || !record.browser) throw new Error(`Session ${sessionId} is not active`);
      browser = await puppeteer.connect({ browserWSEndpoint: record.browser.cdpUrl, defaultViewport: null });
      page = await browser.newPage();
      const routed = await routeToLocalWeb(page, deps.web);
      const visited: PageStructure[] = [];
      for (const url of urls.slice(0, Math.max(maxSteps - 1, 1))) {
        if (job.signal.aborted) return;
        const startedAt = Date.now();
        const loaded = await navigate(page, routed, url);
        if (job.signal.aborted) return;
        let title = "";
        if (loaded.ok) {
          const s = await readStructure(page);
          visited.push(s);
          title = s.headings[0] ?? s.title;
        }
        steps.push({
          number: steps.length + 1,
          action: "go_to_url",
          url,
          title,
          ok: loaded.ok,
          text: loaded.ok ? `Opened "${title}"` : loaded.error,
          startedAt,
          endedAt: Date.now(),
        });
        publish(null);
      }
      const answer = p.outputModelSchema
        ? JSON.stringify(extractWithSchema(p.outputModelSchema, visited))
        : visited.length
          ? `Visited ${visited.length} page${visited.length === 1 ? "" : "s"}: ${visited.map((v) => `"${v.headings[0] ?? v.title}" (${v.url})`).join("; ")}`
          : "None of the pages named in the task could be opened.";
      const now = Date.now();
      steps.push({
        number: steps.length + 1,
        action: "done",
        url: page.url(),
        title: await page.title().catch(() => ""),
        ok: true,
        text: answer,
        startedAt: now,
        endedAt: now,
      });
      publish(answer);
    } finally {
      job.signal.removeEventListener("abort", onStop);
      if (page && (!p.keepBrowserOpen || job.signal.aborted)) await page.close().catch(() => {});
      await browser?.disconnect().catch(() => {});
      if (created && !p.keepBrowserOpen) await deps.sessions.stop(sessionId).catch(() => {});
    }
  };
}
