// Errors shared by the state backends, so callers (the payment path above all) can tell an outage from a bug.

/**
 * The state backend (Redis, a Durable Object) could not be reached or did not answer in time. Operations fail closed
 * with this error instead of succeeding silently: a caller that cannot reserve a budget must not pay. The memory
 * backend never throws it.
 */
export class StateUnavailableError extends Error {
  readonly code = "state_unavailable";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StateUnavailableError";
  }
}

export function isStateUnavailable(err: unknown): err is StateUnavailableError {
  return err instanceof StateUnavailableError || (err as { name?: string } | null)?.name === "StateUnavailableError";
}
