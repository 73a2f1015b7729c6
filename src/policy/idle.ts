import { adoptedWants } from './adopted';
import { justGrantedDirect } from './brief-turn';
import { firstDueMs, firstPhase } from './phase';
import type { PeriodicKind, Policy, TableState } from './types';

// What keeps an idle table cheap (each timer firing and each activity costs workflow
// tasks and history events):
// - the snapshot period starts at snapshotIntervalSecs after activity (a demand signal,
//   a snapshot that found something new, a merge, an operator action) and doubles after
//   every quiet snapshot up to snapshotMaxIntervalSecs, which is therefore the bound on
//   how late a lost demand signal (writer died between seal and signal) is noticed;
// - optimize, index and gc become due only when something they act on changed since
//   their last completed run (the table version, resp. a shard's mergedThroughSeq), or
//   when bumped. Their period still spaces runs out; it no longer makes them run.
//   One whose period came round while nothing changed runs, after the change that ends
//   the quiet, at its table's own point of a period (spreadAfterQuiet).

/** The longest snapshot period: never below snapshotIntervalSecs. */
export const maxSnapshotSecs = (p: Policy): number => Math.max(p.snapshotIntervalSecs, p.snapshotMaxIntervalSecs);

/** What a periodic kind acts on, as a number that grows whenever that changes. */
export function changeMark(state: TableState, kind: PeriodicKind): number {
  // An adopted table has no shards: its pruning acts on versions too.
  if (kind !== 'gc' || state.adopted) return state.version;
  let sum = 0;
  for (const s of state.shards) sum += s.mergedThroughSeq;
  return sum;
}

/** Whether a periodic kind has anything to look at when its period comes round. */
export function hasChanged(state: TableState, kind: PeriodicKind): boolean {
  if (state.adopted) return adoptedWants(state, kind);
  const done = state.periodic[kind].done;
  // Nothing to build whatever changed; a bump (done null) still looks again.
  if (kind === 'index' && state.noIndices === true) return done === null;
  if (state.policy.periodicWhenIdle) return true;
  return done === null || done !== changeMark(state, kind);
}

/**
 * Something happened: the next snapshot comes within snapshotIntervalSecs again. A scan
 * running now may have read the store before it, so it must not count as quiet: the
 * period is halved for it, and its end (quiet: doubled) leaves snapshotIntervalSecs.
 */
export function snapshotSoon(state: TableState, nowMs: number): void {
  state.activityAtMs = nowMs;
  const base = state.policy.snapshotIntervalSecs;
  if (state.snapshotInFlight) {
    state.snapshotEverySecs = base / 2;
  } else {
    state.snapshotEverySecs = base;
    const at = nowMs + base * 1000;
    state.pullInAtMs = Math.min(state.pullInAtMs ?? at, at);
  }
}

/** Brings the next snapshot in to what activity asked for, if that is pending. */
export function applyPullIn(state: TableState): void {
  if (state.pullInAtMs !== undefined) state.dueAtMs.snapshot = Math.min(state.dueAtMs.snapshot, state.pullInAtMs);
  delete state.pullInAtMs;
  delete state.pullInGrantMs;
}

/**
 * End of every step: whether the snapshot activity asked for (snapshotSoon) comes in now.
 * A direct merge (one small generation, ~100 ms) granted in the same instant as the
 * activity ends with a scan of every shard (activities/commit-merge.ts), which
 * reschedules the next snapshot from then; so while that one commit holds the turn and
 * nothing newer happens, the pull-in waits. A steady writer's small seal otherwise
 * re-armed the table's timer to the pulled-in time and, at the commit's end, back out:
 * two history events of its 14. Anything else (the commit ends without a scan, another
 * commit takes the turn, newer activity) applies it: a lost signal is still looked for
 * within snapshotIntervalSecs of the activity, or by a scan that began after it, or,
 * if that direct commit fails after longer than that, when it fails.
 */
export function settlePullIn(state: TableState, nowMs: number): void {
  if (state.pullInAtMs === undefined) return;
  const t = state.turn;
  if (t !== null && t.kind === 'merge') {
    const since = state.activityAtMs ?? -Infinity;
    // Deferred at an earlier step: still that commit, and nothing happened since its grant.
    if (state.pullInGrantMs !== undefined && t.sinceMs === state.pullInGrantMs && since <= t.sinceMs) return;
    // Asked for in this step (a pending one is always settled either way), granted now.
    if (state.pullInGrantMs === undefined && justGrantedDirect(state, nowMs)) {
      state.pullInGrantMs = nowMs;
      return;
    }
  }
  applyPullIn(state);
}

/**
 * A snapshot ended (failed: foundNew null). A quiet snapshot doubles the period (up to
 * the max), one that found something resets it, and a failed one keeps it.
 */
export function scheduleNextSnapshot(state: TableState, nowMs: number, foundNew: boolean | null): void {
  const p = state.policy;
  // A scan (not a failed one) after the activity a pending pull-in was for: it is moot.
  if (foundNew !== null) {
    delete state.pullInAtMs;
    delete state.pullInGrantMs;
  }
  if (foundNew === true) state.snapshotEverySecs = p.snapshotIntervalSecs;
  else if (foundNew === false) state.snapshotEverySecs = Math.min(state.snapshotEverySecs * 2, maxSnapshotSecs(p));
  state.snapshotEverySecs = Math.min(Math.max(state.snapshotEverySecs, p.snapshotIntervalSecs), maxSnapshotSecs(p));
  state.dueAtMs.snapshot = nowMs + state.snapshotEverySecs * 1000;
}

/** A periodic unit was created: remember what it will look at. */
export function markPlanned(state: TableState, kind: PeriodicKind): void {
  state.periodic[kind].planned = changeMark(state, kind);
}

/**
 * A periodic unit finished (nothing to commit, or committed; `prevVersion` is the table
 * version before its commit). It covered what it planned at. A commit of optimize or
 * index works on the table as it is at commit time, so it covers everything up to the
 * version it made; and that version, made by maintenance, gives the other of the two
 * nothing new to do (a fresh index has no unindexed rows, compaction removes no index).
 */
export function markDone(state: TableState, kind: PeriodicKind, prevVersion: number): void {
  const m = state.periodic[kind];
  m.done = m.planned;
  if (kind === 'gc' || state.version === prevVersion) return;
  m.done = state.version;
  const other = state.periodic[kind === 'optimize' ? 'index' : 'optimize'];
  if (other.done === prevVersion) other.done = state.version;
}

/** An operator asked for this kind: it runs at once whether or not anything changed. */
export function forceRun(state: TableState, kind: PeriodicKind): void {
  state.periodic[kind].done = null;
}

/**
 * `quiet`: the periodic kinds that had nothing changed before this commit. Those whose
 * due time passed meanwhile would run at once now; they fall due instead at the point
 * of a period a new table's first run has (a hash of its name). A fleet written again
 * all at once (a deploy, the start of a day) so spreads its maintenance plans over a
 * period, where they all queued in the minute of the first writes behind its merges
 * (5,000 tables on 2 cores: plans queued 35 s, seal -> merged p99 21 s in that minute).
 * Adopted tables are left out: their compaction follows the outside writers.
 */
export function spreadAfterQuiet(state: TableState, quiet: readonly PeriodicKind[], nowMs: number): void {
  if (state.adopted) return;
  for (const k of quiet) {
    if (state.dueAtMs[k] > nowMs || !hasChanged(state, k)) continue;
    state.dueAtMs[k] = firstDueMs(nowMs, state.policy.periodSecs[k], firstPhase(state.table, k));
  }
}
