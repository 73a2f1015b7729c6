import { CancelledFailure, Context } from '@temporalio/activity';
import type { Progress } from './contract';
import type { FaultHooks, FreezePoint } from './deps';
import { phaseReached } from './metrics';

// Heartbeats carry progress, not liveness: a heartbeat is sent only when the details
// changed, so an activity that is alive but stuck stops heartbeating and the heartbeat
// timeout (stallSecs of its phase) catches it. The one exception is an opaque bounded
// step (a mergeInsert, an optimize), which cannot report progress from inside: it
// declares a deadline and is kept alive only until then, so a hung call is still caught.

// The SDK sends an activity's first heartbeat at once and throttles the rest, and the
// server records each one it gets as a write of the workflow's state. A commit of a small
// generation takes ~100 ms, and its one heartbeat was one of the ~7 writes its seal cost
// the server. So the first heartbeat waits FIRST_HEARTBEAT_AFTER_MS (a quarter of the
// heartbeat timeout if that is less) and then carries the latest details; an activity
// that ends before sends none. A stall is caught at most that much later.
export const FIRST_HEARTBEAT_AFTER_MS = 1000;

/** What to do when an activity ends (its reporters' held-back first heartbeat is dropped). */
const onEnd = new WeakMap<Context, (() => void)[]>();

/** Called by the activity interceptor when the activity returns or fails. */
export function progressEnded(ctx: Context): void {
  for (const f of onEnd.get(ctx) ?? []) f();
  onEnd.delete(ctx);
}

export class ProgressReporter {
  private last: string | undefined;
  private lastDetails: Progress | undefined;
  readonly ctx: Context;
  /** Until then heartbeats are held back (the latest is kept); after it they go at once. */
  private readonly firstBeatAtMs: number;
  private held: { details: Progress; timer: ReturnType<typeof setTimeout> } | null = null;
  private ended = false;

  constructor(
    readonly activity: string,
    private readonly faults?: FaultHooks,
  ) {
    this.ctx = Context.current();
    const timeout = this.ctx.info.heartbeatTimeoutMs;
    this.firstBeatAtMs = Date.now() + (timeout ? Math.min(FIRST_HEARTBEAT_AFTER_MS, timeout / 4) : 0);
    onEnd.set(this.ctx, [...(onEnd.get(this.ctx) ?? []), () => this.end()]);
  }

  private beat(details: Progress): void {
    if (this.ended) return;
    const wait = this.firstBeatAtMs - Date.now();
    if (wait <= 0 && this.held === null) return this.ctx.heartbeat(details);
    if (this.held !== null) {
      this.held.details = details;
      return;
    }
    const timer = setTimeout(() => {
      const h = this.held;
      this.held = null;
      if (h && !this.ended) this.ctx.heartbeat(h.details);
    }, wait);
    timer.unref();
    this.held = { details, timer };
  }

  private end(): void {
    this.ended = true;
    if (this.held) clearTimeout(this.held.timer);
    this.held = null;
  }

  get attempt(): number {
    return this.ctx.info.attempt;
  }

  /** The details the previous attempt last reported, if any. */
  get previous(): Partial<Progress> | undefined {
    const d: unknown = this.ctx.info.heartbeatDetails;
    return d && typeof d === 'object' ? (d as Partial<Progress>) : undefined;
  }

  report(details: Progress): void {
    this.throwIfCancelled();
    const text = JSON.stringify(details);
    if (text === this.last) return;
    this.last = text;
    this.lastDetails = details;
    phaseReached(this.ctx, details.phase);
    this.beat(details);
  }

  throwIfCancelled(): void {
    const signal = this.ctx.cancellationSignal;
    if (!signal.aborted) return;
    const reason: unknown = signal.reason;
    throw reason instanceof Error ? reason : new CancelledFailure(String(reason ?? 'CANCELLED'));
  }

  /** Await `work`, but give up as soon as the activity is cancelled. */
  async race<T>(work: Promise<T>): Promise<T> {
    this.throwIfCancelled();
    return Promise.race([work, this.ctx.cancelled]);
  }

  /** A fault-injection point (tests only): lets a test freeze the activity here; `work` names maintenance that may be riding a merge's commit. */
  async point(phase: FreezePoint['phase'], work?: FreezePoint['work']): Promise<void> {
    const hook = this.faults?.freezeProgress;
    if (!hook) return;
    const beat = (): void => {
      if (this.lastDetails) this.report(this.lastDetails);
    };
    await this.race(Promise.resolve(hook({ activity: this.activity, phase, ...(work ? { work } : {}), attempt: this.attempt, beat })));
  }

  /**
   * Run an opaque step that declared its own deadline (epoch ms, also in the details):
   * the same details are re-sent until the deadline, then no more, so if the step hangs
   * past its bound the heartbeat timeout fires.
   */
  async bounded<T>(details: Progress & { deadlineMs: number }, work: Promise<T>): Promise<T> {
    this.report(details);
    const timeout = this.ctx.info.heartbeatTimeoutMs;
    const every = timeout ? Math.max(50, Math.floor(timeout / 3)) : 1000;
    const timer = setInterval(() => {
      if (Date.now() < details.deadlineMs) this.beat(details);
      else clearInterval(timer);
    }, every);
    try {
      return await this.race(work);
    } finally {
      clearInterval(timer);
    }
  }
}
