// A session's event log (captchas met, files downloaded) and its filtered, paged listing.
import { randomUUID } from "node:crypto";
import { TEAM_ID } from "../team.js";
import { SessionError } from "./session-error.js";

export const EVENT_LOG_TYPES = ["captcha_detected", "captcha_solved", "captcha_error", "file_downloaded"] as const;
export type SessionEventLogType = (typeof EVENT_LOG_TYPES)[number];

export interface SessionEventLog {
  id: string;
  sessionId: string;
  targetId: string | null;
  pageUrl: string | null;
  teamId: string;
  type: SessionEventLogType;
  metadata: Record<string, unknown>;
  timestamp: number;
}

export interface EventLogQuery {
  types?: string[];
  targetId?: string;
  startTimestamp?: number;
  endTimestamp?: number;
  page: number;
  limit: number;
}

export class SessionEventLogs {
  private readonly entries: SessionEventLog[] = [];

  constructor(private readonly sessionId: string) {}

  record(
    type: SessionEventLogType,
    fields: { targetId?: string | null; pageUrl?: string | null; metadata?: Record<string, unknown> } = {},
  ): SessionEventLog {
    const entry: SessionEventLog = {
      id: randomUUID(),
      sessionId: this.sessionId,
      targetId: fields.targetId ?? null,
      pageUrl: fields.pageUrl ?? null,
      teamId: TEAM_ID,
      type,
      metadata: fields.metadata ?? {},
      timestamp: Date.now(),
    };
    this.entries.push(entry);
    return entry;
  }

  /** Oldest first, as a log reads; `{data, totalCount, page, perPage}`. */
  list(q: EventLogQuery) {
    for (const t of q.types ?? []) {
      if (!EVENT_LOG_TYPES.includes(t as SessionEventLogType))
        throw new SessionError(400, "invalid_params", `types must be among ${EVENT_LOG_TYPES.join(", ")}`);
    }
    const matching = this.entries.filter(
      (e) =>
        (!q.types?.length || q.types.includes(e.type)) &&
        (!q.targetId || e.targetId === q.targetId) &&
        (q.startTimestamp === undefined || e.timestamp >= q.startTimestamp) &&
        (q.endTimestamp === undefined || e.timestamp <= q.endTimestamp),
    );
    return { data: matching.slice((q.page - 1) * q.limit, q.page * q.limit), totalCount: matching.length, page: q.page, perPage: q.limit };
  }
}
