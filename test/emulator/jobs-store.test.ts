// The job store alone: states in order, the bounded run queue, stop, failure messages, forgetting, closing.
import { describe, expect, it } from "vitest";
import { JobStore, type Job } from "../../emulator/jobs/job-store.js";

/** A runner that waits until released (or its job is aborted). */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  const run = (job: Job) =>
    new Promise<void>((resolve) => {
      void opened.then(resolve);
      job.signal.addEventListener("abort", () => resolve());
    });
  return { run, open };
}

describe("JobStore", () => {
  it("runs a job pending → running → completed, with a UUID id, findable only under its own kind", async () => {
    const store = new JobStore();
    const job = store.start("scrape", { url: "x" }, async (j) => {
      j.data = { ok: true };
    });
    expect(job.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    await store.settled(job.id);
    expect(job.history).toEqual(["pending", "running", "completed"]);
    expect(store.get("scrape", job.id)).toBe(job);
    expect(store.get("crawl", job.id)).toBeUndefined();
    expect(store.get("scrape", "nope")).toBeUndefined();
  });

  it("keeps jobs pending while maxRunningJobs are running, then starts them in order", async () => {
    const store = new JobStore({ maxRunningJobs: 2 });
    const g = gate();
    const jobs = [1, 2, 3].map(() => store.start("crawl", {}, g.run));
    await new Promise((r) => setTimeout(r, 20));
    expect(jobs.map((j) => j.status)).toEqual(["running", "running", "pending"]);
    g.open();
    await Promise.all(jobs.map((j) => store.settled(j.id)));
    expect(jobs.map((j) => j.status)).toEqual(["completed", "completed", "completed"]);
  });

  it("fails a job whose runner throws, with the thrown message", async () => {
    const store = new JobStore();
    const job = store.start("extract", {}, async () => {
      throw new Error("No page could be loaded");
    });
    await store.settled(job.id);
    expect(job).toMatchObject({ status: "failed", error: "No page could be loaded" });
  });

  it("stops running and pending jobs at once and leaves ended jobs as they are", async () => {
    const store = new JobStore({ maxRunningJobs: 1 });
    const g = gate();
    const running = store.start("task/cua", {}, g.run);
    const pending = store.start("task/cua", {}, g.run);
    await new Promise((r) => setTimeout(r, 20));
    expect(store.stop("task/cua", running.id)).toBe(true);
    expect(running.status).toBe("stopped");
    expect(running.signal.aborted).toBe(true);
    expect(store.stop("task/cua", pending.id)).toBe(true);
    await Promise.all([store.settled(running.id), store.settled(pending.id)]);
    expect(running.history).toEqual(["pending", "running", "stopped"]);
    expect(pending.history).toEqual(["pending", "stopped"]);
    expect(store.stop("task/cua", running.id)).toBe(true);
    expect(running.history).toEqual(["pending", "running", "stopped"]);
    expect(store.stop("task/browser-use", running.id)).toBe(false);
  });

  it("forgets the oldest finished jobs beyond maxKeptJobs, never a running one", async () => {
    const store = new JobStore({ maxKeptJobs: 2 });
    const g = gate();
    const first = store.start("scrape", {}, g.run);
    const done = store.start("scrape", {}, async () => {});
    await store.settled(done.id);
    const third = store.start("scrape", {}, async () => {});
    expect(store.get("scrape", first.id)).toBe(first); // still running
    expect(store.get("scrape", done.id)).toBeUndefined();
    expect(store.get("scrape", third.id)).toBe(third);
    g.open();
    await store.settled(first.id);
  });

  it("close() fails what is pending or running and waits for the runners to return", async () => {
    const store = new JobStore({ maxRunningJobs: 1 });
    const g = gate();
    const a = store.start("web-crawl", {}, g.run);
    const b = store.start("web-crawl", {}, g.run);
    await new Promise((r) => setTimeout(r, 20));
    await store.close();
    expect(a).toMatchObject({ status: "failed", error: "The emulator shut down" });
    expect(b).toMatchObject({ status: "failed", error: "The emulator shut down" });
  });
});
