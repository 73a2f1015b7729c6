import { patched } from '@temporalio/workflow';

// Every workflow-code change that alters commands is gated by a patch so runs recorded
// before it replay as they ran. Each patch a run asks for is a marker event and an
// upsert of the TemporalChangeVersion search attribute (a visibility write): 11 patches
// were 22 events at the start of every run. A run started by this code records one
// marker, CURRENT, which stands for all of them; runs recorded before it find no such
// marker on replay and ask for each patch as they did.

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
  | 'commit-admission-wait';

/** The patch that implies every PatchId above; a new patch needs a new CURRENT too. */
const CURRENT = 'turnstile-9';

// Module state is per workflow run (the SDK isolates workflow modules per run).
let current: boolean | undefined;

/** patched(id), answered by the one CURRENT marker in runs that have it. */
export function hasPatch(id: PatchId): boolean {
  current ??= patched(CURRENT);
  return current || patched(id);
}
