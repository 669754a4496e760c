// The JSON a client reads for a job: status, results (paged for multi-page jobs), in each surface's own field names.
import type { Job } from "./job-store.js";

export const DEFAULT_BATCH_SIZE = 20;

/** `{jobId, status, data?, error?}` for single-result jobs (scrape, extract). */
export function singleView(job: Job): Record<string, unknown> {
  const view: Record<string, unknown> = { jobId: job.id, status: job.status };
  if (job.data !== undefined && job.status === "completed") view.data = job.data;
  if (job.error) view.error = job.error;
  if (job.metadata) view.metadata = job.metadata;
  return view;
}

/** Agent tasks: steps so far while running, `finalResult` once done, `liveUrl` null (no live view). */
export function taskView(job: Job): Record<string, unknown> {
  return {
    jobId: job.id,
    status: job.status,
    data: job.data ?? null,
    metadata: job.metadata ?? null,
    error: job.error ?? null,
    liveUrl: null,
  };
}

/**
 * One batch of a multi-page job. `totalField` is the surface's name for the page count (totalScrapedPages,
 * totalCrawledPages, totalPages). Batches are 1-based; a page past the end is empty.
 */
export function pagedView(job: Job, totalField: string, page = 1, batchSize = DEFAULT_BATCH_SIZE): Record<string, unknown> {
  const pages = job.pages;
  const view: Record<string, unknown> = {
    jobId: job.id,
    status: job.status,
    data: pages.slice((page - 1) * batchSize, page * batchSize),
    [totalField]: pages.length,
    totalPageBatches: Math.ceil(pages.length / batchSize),
    currentPageBatch: page,
    batchSize,
  };
  if (job.error) view.error = job.error;
  return view;
}
