import { applyOverride } from '../config/policy-schema';
import { UsageError } from '../messages/errors';
import { workflowIdForTable } from '../messages/names';
import { MAX_AGE_MS, type DemandRecord } from '../policy/demand-record';
import { readStatus } from '../client/read-status';
import { retryQuery } from '../client/busy-retry';
import { policyDryRun } from '../sim/dry-run';
import type { demandRecord } from '../../workflows/messages';
import { str, type Parsed } from './args';
import { readClient, readConfig } from './context';
import { formatDryRun, noDemandLine } from './dry-run-report';
import { progress } from './progress';

// `turnstile policy NAME --set FILE --dry-run [--hours H] [--json]`: replays the table's
// recorded demand under its current policy and under the proposed one (src/sim/dry-run.ts).
// Reads two queries and changes nothing: no update, no table.json.

// Checked against its definition at compile time without loading @temporalio/workflow (read-status.ts).
const DEMAND_QUERY: (typeof demandRecord)['name'] = 'demandRecord';

export const DEFAULT_HOURS = 24;
export const MIN_HOURS = 0.1;
/** The record keeps nothing older. */
export const MAX_HOURS = MAX_AGE_MS / 3_600_000;

export function hoursFlag(p: Parsed): number {
  const v = str(p, 'hours');
  if (v === undefined) return DEFAULT_HOURS;
  const n = Number(v);
  if (!/^\d+(\.\d+)?$/.test(v) || !(n >= MIN_HOURS && n <= MAX_HOURS)) {
    throw new UsageError(`--hours: ${JSON.stringify(v)} is not a number of hours in [${MIN_HOURS}, ${MAX_HOURS}]`);
  }
  return n;
}

export async function dryRun(p: Parsed, name: string, override: unknown): Promise<void> {
  const hours = hoursFlag(p);
  const reader = readClient(readConfig());
  const [view, record] = await (async () => {
    try {
      const v = await readStatus(reader, name);
      const rec = await retryQuery(() => reader.query<DemandRecord>(workflowIdForTable(name), DEMAND_QUERY)).catch((e: Error) => {
        if (/unknown query ?type/i.test(e.message)) throw new Error(`policy --dry-run: the workflow of ${name} keeps no demand record (it runs a release before 0.4.0); try again after its next continue-as-new`);
        throw e;
      });
      return [v, rec] as const;
    } finally {
      reader.close();
    }
  })();
  if (view.adopted) throw new UsageError(`policy --dry-run: ${name} is an adopted table; the dry run replays the seals of managed tables only`);
  // The same check, on the same current policy, as the workflow's setPolicy validator.
  const next = applyOverride(view.policy, override);
  if (!next.ok) throw new UsageError(`policy: ${next.error.split('\n')[0]}`);

  const shown = progress();
  const report = (() => {
    try {
      return policyDryRun({
        table: name,
        shards: view.shards.map((s) => s.shard),
        current: view.policy,
        proposed: next.policy,
        record,
        nowMs: Date.now(),
        hours,
        onRun: (r) => shown.show(`replaying ${name}: ${r.policy} policy, seed ${r.seed} (run ${r.index + 1} of ${r.total})`),
      });
    } finally {
      shown.done();
    }
  })();
  if (p.flags.json) {
    console.log(JSON.stringify(report ?? { table: name, hours, empty: true, message: noDemandLine(hours) }, null, 2));
    return;
  }
  console.log(report ? formatDryRun(report) : noDemandLine(hours));
}
