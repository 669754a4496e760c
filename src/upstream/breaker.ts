// One upstream account's circuit breaker (docs/accounts.md): opened by errors and slow answers among its last calls,
// with half-open probes. The accounts (accounts.ts) keep one per account and share its openings across a fleet.
export type BreakerState = "closed" | "open" | "half-open";

export interface BreakerSettings {
  /** Failures (5xx answers, no answer, or answers slower than slowMs) among the last `window` calls that open it. */
  failures: number;
  window: number;
  /** An answer slower than this counts as a failure. */
  slowMs: number;
  /** How long it stays open before one probe is let through (half-open). */
  openMs: number;
}

/**
 * One account's circuit breaker: open after `failures` failures among the last `window` calls; after `openMs` one call
 * at a time is let through (half-open): a success closes it, a failure opens it again.
 */
export class Breaker {
  private outcomes: boolean[] = [];
  private openedAt = 0;
  private probing = false;
  state: BreakerState = "closed";
  /** Times it opened since start. */
  opened = 0;

  constructor(
    private readonly settings: BreakerSettings,
    private readonly now: () => number,
    private readonly onChange?: (state: BreakerState) => void,
    /** It opened from this instance's own calls, until the given time (published for the fleet). */
    private readonly onTrip?: (until: number) => void,
  ) {}

  /** When it stays open until (a probe may go after it), while open. */
  get openUntil(): number | undefined {
    return this.state === "open" ? this.openedAt + this.settings.openMs : undefined;
  }

  /**
   * Another instance opened it until `until`: open here too until then (unless it already is for longer). Not
   * published again; the probes after it are this instance's own.
   */
  adopt(until: number): void {
    if (until <= this.now()) return;
    if (this.state === "open" && this.openedAt + this.settings.openMs >= until) return;
    this.openedAt = until - this.settings.openMs;
    this.outcomes = [];
    this.probing = false;
    if (this.state !== "open") this.opened++;
    this.set("open");
  }

  /** Whether a call may go now (half-open: one probe at a time; the caller must report it). */
  allow(): boolean {
    if (this.state === "closed") return true;
    if (this.state === "open") {
      if (this.now() - this.openedAt < this.settings.openMs) return false;
      this.set("half-open");
    }
    if (this.probing) return false;
    this.probing = true;
    return true;
  }

  /** Whether a call could go now, without taking the probe (for ordering candidates). */
  available(): boolean {
    if (this.state === "closed") return true;
    if (this.state === "open") return this.now() - this.openedAt >= this.settings.openMs;
    return !this.probing;
  }

  /** One call's outcome: failed (5xx, no answer) or took `ms`. */
  record(failed: boolean, ms: number): void {
    const bad = failed || ms > this.settings.slowMs;
    if (this.state === "half-open") {
      this.probing = false;
      if (bad) this.trip();
      else {
        this.outcomes = [];
        this.set("closed");
      }
      return;
    }
    if (this.state === "open") return;
    this.outcomes.push(bad);
    if (this.outcomes.length > this.settings.window) this.outcomes.shift();
    if (this.outcomes.filter(Boolean).length >= this.settings.failures) this.trip();
  }

  private trip(): void {
    this.openedAt = this.now();
    this.outcomes = [];
    this.probing = false;
    this.opened++;
    this.set("open");
    this.onTrip?.(this.openedAt + this.settings.openMs);
  }

  private set(state: BreakerState): void {
    if (this.state === state) return;
    this.state = state;
    this.onChange?.(state);
  }
}
