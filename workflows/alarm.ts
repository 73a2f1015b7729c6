import { CancellationScope, isCancellation, sleep } from '@temporalio/workflow';
import { alarmTimer } from './timers';

/**
 * The table's one durable timer, for the earliest deadline the core asks for. A timer
 * armed earlier for the same deadline (`id`, src/policy/wake.ts) is kept: it fires
 * early, the core finds nothing due and names its deadline again. Every commit of a
 * written table moves the snapshot deadline later (the commit's scan counts as one);
 * re-arming for each was two history events (canceled, started) per seal, where the
 * early firing costs one timer and one workflow task per snapshotIntervalSecs. A timer
 * armed for another deadline, one that is gone (a periodic kind started by a seal before
 * its timer, a unit granted before its promotion), is re-armed: two events in a task that
 * runs anyway, where its firing would cost a timer event, a workflow task and a new timer.
 */
export class Alarm {
  private atMs: number | null = null;
  private id: string | null = null;
  private scope: CancellationScope | null = null;
  fired = false;

  /** `reason` (src/policy/wake.ts) becomes the timer's summary in the UI: what the timer was armed for. */
  set(atMs: number | null, reason?: string | null, id?: string | null): void {
    if (atMs === null) return;
    if (this.scope !== null && this.atMs !== null && (atMs === this.atMs || (atMs > this.atMs && id === this.id))) return;
    this.scope?.cancel();
    this.atMs = atMs;
    this.id = id ?? null;
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
