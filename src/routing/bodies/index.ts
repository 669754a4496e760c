// Every body a route-table row declares, by name: the table (../table.ts) names them, the chain checks them
// (../check-body.ts), `tollgate routes` lists the fields that name resources.
import { json, type BodySpec } from "./declare.js";
import * as jobs from "./jobs.js";
import * as sandboxes from "./sandboxes.js";
import * as sessions from "./sessions.js";

const multipart = (...fields: string[]): BodySpec => ({ kind: "multipart", fields });

export const BODY = {
  none: { kind: "none" } as BodySpec,
  sandboxPlane: { kind: "sandbox" } as BodySpec,
  bytes: { kind: "bytes" } as BodySpec,
  webSearch: json(jobs.webSearchBody),
  webFetch: json(jobs.webFetchBody),
  batchFetch: json(jobs.batchFetchBody),
  webCrawl: json(jobs.webCrawlBody),
  scrape: json(jobs.scrapeBody),
  batchScrape: json(jobs.batchScrapeBody),
  crawl: json(jobs.crawlBody),
  extract: json(jobs.extractBody),
  task: (agent: keyof typeof jobs.taskBodies) => json(jobs.taskBodies[agent]),
  createSession: json(sessions.createSessionBody),
  x402Session: json(sessions.x402SessionBody),
  extendSession: json(sessions.extendSessionBody),
  updateSession: json(sessions.updateSessionBody),
  captcha: json(sessions.captchaBody),
  sessionSnapshot: json(sessions.sessionSnapshotBody),
  computerAction: json(sessions.computerActionBody),
  sessionUpload: multipart("file"),
  createProfile: json(sandboxes.createProfileBody),
  extensionUpload: multipart("file", "name"),
  createSandbox: json(sandboxes.createSandboxBody),
  sandboxSnapshot: json(sandboxes.sandboxSnapshotBody),
  expose: json(sandboxes.exposeBody),
  unexpose: json(sandboxes.unexposeBody),
  network: json(sandboxes.networkBody),
  createVolume: json(sandboxes.createVolumeBody),
  createImageBuild: json(sandboxes.createImageBuildBody),
  reuseImageBuild: json(sandboxes.reuseImageBuildBody),
  completeImageBuild: json(sandboxes.completeImageBuildBody),
  cancelImageBuild: json(sandboxes.cancelImageBuildBody),
} as const;

export type { BodySpec } from "./declare.js";
