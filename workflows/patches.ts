import { patched } from '@temporalio/workflow';

// Every workflow-code change that alters commands is gated by a patch so runs recorded
// before it replay as they ran. Each patch a run asks for is a marker event and an
// upsert of the TemporalChangeVersion search attribute (a visibility write): 11 patches
// were 22 events at the start of every run. A run started by this code records one
// marker, CURRENT, which stands for all of them; runs recorded before it find no such
// marker on replay and ask for each patch as they did. A new patch needs a new CURRENT;
// runs recorded under an earlier one (PREVIOUS) still find theirs and keep what it
// implied, and not the patches that came after it.

export type PatchId =
  | 'idle-cost'
  | 'group-merge-commits'
  | 'pipelined-merges'
  | 'direct-merges'
  | 'defer-snapshot-pull-in'
  | 'hostile-clients'
  | 'bounded-runs'
  | 'short-runs'
  | 'quiet-direct-turns'
  | 'named-activity-ids'
  | 'commit-admission-wait'
  | 'spread-periodic'
  | 'indexless-tables'
  | 'lazy-periodic-timers'
  | 'merge-preparation-priority'
  | 'whole-activations'
  | 'pressure-at-once';

/** The patch that implies every PatchId above. */
const CURRENT = 'turnstile-13';
/** Earlier CURRENT markers, newest first, each with the patches that came after it. */
const PREVIOUS: { marker: string; notImplied: PatchId[] }[] = [
  { marker: 'turnstile-12', notImplied: ['pressure-at-once'] },
  { marker: 'turnstile-11', notImplied: ['whole-activations', 'pressure-at-once'] },
  { marker: 'turnstile-10', notImplied: ['merge-preparation-priority', 'whole-activations', 'pressure-at-once'] },
  { marker: 'turnstile-9', notImplied: ['spread-periodic', 'indexless-tables', 'lazy-periodic-timers', 'merge-preparation-priority', 'whole-activations', 'pressure-at-once'] },
];

// Module state is per workflow run (the SDK isolates workflow modules per run).
let current: boolean | undefined;
let previous: { marker: string; notImplied: PatchId[] } | null | undefined;

/** patched(id), answered by the one CURRENT (or earlier such) marker in runs that have it. */
export function hasPatch(id: PatchId): boolean {
  current ??= patched(CURRENT);
  if (current) return true;
  // Only replays get here: a new run has just recorded CURRENT. Asking for an older
  // marker during a replay never records one.
  previous ??= PREVIOUS.find((p) => patched(p.marker)) ?? null;
  if (previous && !previous.notImplied.includes(id)) return true;
  return patched(id);
}
