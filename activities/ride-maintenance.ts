import type { Maintained, MaintainedRun } from '../src/policy/types';
import { optimizeTable } from './commit-optimize';
import type { MaintainInput } from './contract';
import type { ActivityDeps } from './deps';
import { deleteGcFiles } from './gc';
import { planGc } from './plan-gc';
import { planOptimize } from './plan-optimize';
import type { ProgressReporter } from './progress';
import { costMeter, type CostMeter } from './unit-cost';

// The maintenance that rode a merge's turn (src/policy/rides.ts), run by the merge's
// commit after its upsert, still in the turn: each kind planned and, if its plan finds
// work, carried out, exactly as its own preparation and commit activities do. A failure
// is reported, not thrown: the merge has committed, and the table runs that kind on its
// own next time.

export async function runRiders(deps: ActivityDeps, table: string, maintain: MaintainInput, progress: ProgressReporter): Promise<Maintained> {
  const out: Maintained = {};
  const optimize = maintain.optimize;
  if (optimize) {
    out.optimize = await ride(deps, async (cost) => {
      const plan = await planOptimize(deps, { table, retentionSecs: optimize.retentionSecs });
      if (!plan.needed) return { rows: 0 };
      const r = await optimizeTable(deps, { table, retentionSecs: optimize.retentionSecs }, progress, cost);
      return { rows: r.rows, version: r.version };
    });
  }
  const gc = maintain.gc;
  if (gc) {
    out.gc = await ride(deps, async () => {
      const plan = await planGc(deps, { table, mergedThrough: gc.mergedThrough });
      return { rows: plan.files.length + plan.tempFiles.length > 0 ? (await deleteGcFiles(deps, { table, ...plan }, progress)).deleted : 0 };
    });
  }
  return out;
}

async function ride(deps: ActivityDeps, fn: (cost: CostMeter) => Promise<Pick<MaintainedRun, 'rows' | 'version'>>): Promise<MaintainedRun> {
  const t = performance.now();
  const cost = costMeter(deps);
  const ms = () => Math.round(performance.now() - t);
  try {
    const r = await cost.during(() => fn(cost));
    return { ms: ms(), ...r, cost: cost.result() };
  } catch (err) {
    return { ms: ms(), rows: 0, error: (err instanceof Error ? err.message : String(err)).split('\n')[0]!, cost: cost.result() };
  }
}
