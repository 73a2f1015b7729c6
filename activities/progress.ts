import { CancelledFailure, Context } from '@temporalio/activity';
import type { Progress } from './contract';
import type { FaultHooks, FreezePoint } from './deps';
import { phaseReached } from './metrics';

// Heartbeats carry progress, not liveness: a heartbeat is sent only when the details
// changed, so an activity that is alive but stuck stops heartbeating and the heartbeat
// timeout (stallSecs of its phase) catches it. The one exception is an opaque bounded
// step (a mergeInsert, an optimize), which cannot report progress from inside: it
// declares a deadline and is kept alive only until then, so a hung call is still caught.

export class ProgressReporter {
  private last: string | undefined;
  private lastDetails: Progress | undefined;
  readonly ctx: Context;

  constructor(
    readonly activity: string,
    private readonly faults?: FaultHooks,
  ) {
    this.ctx = Context.current();
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
    this.ctx.heartbeat(details);
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

  /** A fault-injection point (tests only): lets a test freeze the activity here. */
  async point(phase: FreezePoint['phase']): Promise<void> {
    const hook = this.faults?.freezeProgress;
    if (!hook) return;
    const beat = (): void => {
      if (this.lastDetails) this.report(this.lastDetails);
    };
    await this.race(Promise.resolve(hook({ activity: this.activity, phase, attempt: this.attempt, beat })));
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
      if (Date.now() < details.deadlineMs) this.ctx.heartbeat(details);
      else clearInterval(timer);
    }, every);
    try {
      return await this.race(work);
    } finally {
      clearInterval(timer);
    }
  }
}
