import { CancellationScope, isCancellation, sleep } from '@temporalio/workflow';
import { alarmTimer } from './timers';

/**
 * The table's one durable timer, for the earliest deadline the core asks for. It is
 * re-armed only when that deadline changes, so a stream of signals does not start and
 * cancel a timer each time (two history events per signal).
 */
export class Alarm {
  private atMs: number | null = null;
  private scope: CancellationScope | null = null;
  fired = false;

  /**
   * `reason` (src/policy/wake.ts) becomes the timer's summary in the UI. It does not
   * re-arm a timer for the same instant: it only ever labels the deadline.
   */
  set(atMs: number | null, reason?: string | null): void {
    if (atMs === this.atMs && (this.scope !== null || atMs === null)) return;
    this.scope?.cancel();
    this.scope = null;
    this.atMs = atMs;
    if (atMs === null) return;
    const scope = new CancellationScope();
    this.scope = scope;
    scope.run(() => sleep(Math.max(1, atMs - Date.now()), alarmTimer(reason))).then(
      () => {
        if (this.scope !== scope) return;
        this.scope = null;
        this.atMs = null;
        this.fired = true;
      },
      (err: unknown) => {
        if (!isCancellation(err)) throw err;
      },
    );
  }

  /** True once per firing. */
  take(): boolean {
    const f = this.fired;
    this.fired = false;
    return f;
  }
}
