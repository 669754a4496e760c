// Validates the CreateSessionParams the emulator acts on; every other key is accepted and ignored.
import * as z from "zod";
import { SessionError } from "./session-error.js";

export const DEFAULT_SCREEN = { width: 1280, height: 720 } as const;
/** The upstream's default lifetime is a team setting; the emulator picks 30 minutes (the x402 default). */
export const DEFAULT_TIMEOUT_MINUTES = 30;
export const MAX_TIMEOUT_MINUTES = 24 * 60;

const createSessionParams = z
  .object({
    screen: z
      .object({
        width: z.number().int().min(200).max(7680),
        height: z.number().int().min(200).max(4320),
      })
      .optional(),
    // Fractions are allowed so tests can ask for a lifetime of a few seconds.
    timeoutMinutes: z.number().positive().max(MAX_TIMEOUT_MINUTES).optional(),
    acceptCookies: z.boolean().optional(),
    profile: z
      .object({ id: z.string().min(1).optional(), persistChanges: z.boolean().optional() })
      .loose()
      .optional(),
    startFromSnapshot: z
      .object({ snapshotId: z.string().min(1) })
      .loose()
      .optional(),
    extensionIds: z.array(z.string()).optional(),
    saveDownloads: z.boolean().optional(),
    enableWebRecording: z.boolean().optional(),
    enableVideoWebRecording: z.boolean().optional(),
    solveCaptchas: z.boolean().optional(),
  })
  .loose();

export interface SessionLaunchParams {
  screen: { width: number; height: number };
  timeoutMinutes: number;
  acceptCookies: boolean;
  /** The profile the session starts from; with persistChanges its user data is written back when the session ends. */
  profile?: { id: string; persistChanges: boolean };
  startFromSnapshotId?: string;
  extensionIds: string[];
  saveDownloads: boolean;
  enableWebRecording: boolean;
  enableVideoWebRecording: boolean;
  solveCaptchas: boolean;
}

/** First issue as `field: problem`, so the client sees which field to fix. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "Invalid request body";
  const field = issue.path.join(".");
  return field ? `${field}: ${issue.message}` : issue.message;
}

export function parseCreateSessionParams(body: unknown): SessionLaunchParams {
  if (body === undefined || body === null) body = {};
  const parsed = createSessionParams.safeParse(body);
  if (!parsed.success) throw new SessionError(400, "invalid_params", `Invalid session parameters: ${describeIssue(parsed.error)}`);
  return {
    screen: parsed.data.screen ?? { ...DEFAULT_SCREEN },
    timeoutMinutes: parsed.data.timeoutMinutes ?? DEFAULT_TIMEOUT_MINUTES,
    acceptCookies: parsed.data.acceptCookies ?? false,
    profile: parsed.data.profile?.id
      ? { id: parsed.data.profile.id, persistChanges: parsed.data.profile.persistChanges ?? false }
      : undefined,
    startFromSnapshotId: parsed.data.startFromSnapshot?.snapshotId,
    extensionIds: parsed.data.extensionIds ?? [],
    saveDownloads: parsed.data.saveDownloads ?? false,
    enableWebRecording: parsed.data.enableWebRecording ?? false,
    enableVideoWebRecording: parsed.data.enableVideoWebRecording ?? false,
    solveCaptchas: parsed.data.solveCaptchas ?? false,
  };
}
