import { CancellationScope, isCancellation, sleep } from '@temporalio/workflow';
import { alarmTimer } from './timers';

/**
 * The table's one durable timer, for the earliest deadline the core asks for. A timer
 * already armed for that deadline or an earlier one is kept: it fires early, the core
 * finds nothing due and names its deadline again. Every commit of a written table
 * moves the snapshot deadline later (the commit's scan counts as one); re-arming for
 * each was two history events (canceled, started) per seal, where the early firing
 * costs one timer and one workflow task per snapshotIntervalSecs.
 */
export class Alarm {
  private atMs: number | null = null;
  private scope: CancellationScope | null = null;
  fired = false;

  /**
   * `reason` (src/policy/wake.ts) becomes the timer's summary in the UI: what the timer
   * was armed for. Only an earlier deadline than the armed one re-arms it.
   */
  set(atMs: number | null, reason?: string | null): void {
    if (atMs === null || (this.scope !== null && this.atMs !== null && atMs >= this.atMs)) return;
    this.scope?.cancel();
    this.atMs = atMs;
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
