import { setTimeout as wait } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/activity';
import { Index } from '@lancedb/lancedb';
import { predictedRewriteBytes } from '../src/policy/adopted';
import type { Observation } from '../src/policy/types';
import type { UnitCost } from '../src/policy/unit-results';
import { adoptedLocation, openAdopted } from '../src/storage/adopted-table';
import type { LanceOp } from '../src/storage/lance-commit-bytes';
import { lanceTableDir, type LanceTable } from '../src/storage/lance-table';
import type { Costed } from './contract';
import { indexDeadlineMs, optimizeDeadlineMs } from './deadlines';
import type { ActivityDeps } from './deps';
import { addLanceBytes } from './lance-cost';
import { ProgressReporter } from './progress';
import { costMeter, withCost } from './unit-cost';

// Maintenance of an adopted table, one that outside processes keep writing. Looking
// (observe, plan) is read-only and runs on any worker at any time. Commits hold the
// table's turn, which orders Turnstile's own commits; outside writers do not take it,
// so a commit can lose a race with theirs ("Retryable commit conflict ... preempted by
// concurrent transaction Update": a compaction whose fragments a writer's update
// touched meanwhile). Such a commit is retried a bounded number of times after a
// random wait that doubles (full jitter: retries of several tables never line up), then
// fails retryable and the core backs the unit off. Pruning never deletes unverified
// files: they may be an outside writer's finished, not yet committed data.
//
// Lance's compaction rewrites every fragment under ~1M rows and loses to any outside
// update of a row in one of them meanwhile. So it comes often (the adopted policy's
// short optimize period): few small fragments make a short rewrite, a short rewrite
// rarely meets an update, and a lost one is retried within a few hundred ms. Measured
// with three writers upserting (20% updates) into a 1.1M-row table: every compaction
// committed within 1-4 attempts and fragments stayed under 70. A table whose every
// fragment is small (under ~1M rows in all) is rewritten whole each time and meets
// updating writers far more often (docs/operations.md, Adopted tables).

export interface AdoptedRef {
  table: string;
  /** The Lance table's directory (src/storage/adopted-table.ts). */
  uri: string;
}

export type AdoptedKind = 'optimize' | 'index' | 'gc';

export interface PlanAdoptedInput extends AdoptedRef {
  kind: AdoptedKind;
  retentionSecs: number;
  compactAtSmallFragments: number;
  indexAtUnindexedShare: number;
  pruneAtVersions: number;
}

export interface AdoptedPlan {
  needed: boolean;
  reason: string;
  numFragments: number;
  numSmallFragments: number;
  unindexedRows: number;
  versionsPastRetention: number;
  /** Compaction's estimate: the small fragments' share of the table's bytes. */
  predictedBytes: number;
  /** Indices whose unindexed share passed the policy's, by name. */
  staleIndices: string[];
}

/** planAdopted's result: the plan the commit acts on, and what looking cost (CPU only: it reads metadata). */
export type PlanAdoptedResult = AdoptedPlan & Costed;

export interface CommitAdoptedInput extends AdoptedRef {
  kind: AdoptedKind;
  retentionSecs: number;
  indexAtUnindexedShare: number;
  conflictRetries: number;
  conflictBackoffMaxSecs: number;
}

export interface CommitAdoptedResult {
  version: number;
  rows: number;
  /** Attempts lost to outside commits before this one succeeded. */
  conflicts: number;
  fragmentsRemoved: number;
  fragmentsAdded: number;
  versionsPruned: number;
  indicesRebuilt: string[];
  /** The table right after the commit. */
  observation: Observation;
  /** What the attempt that committed wrote and read (attempts lost to outside writers are not counted), and the CPU of all of them. */
  cost?: UnitCost;
}

/**
 * The Lance operations a commit of each kind makes: versions of an adopted table made by
 * anything else meanwhile are outside writers', not this commit's. optimize (also gc's
 * way to prune) reserves fragment ids, rewrites and folds rows into indices; a rebuild
 * creates an index.
 */
const OPS_OF: Record<AdoptedKind, ReadonlySet<LanceOp>> = {
  optimize: new Set(['reserveFragments', 'rewrite', 'createIndex']),
  gc: new Set(['reserveFragments', 'rewrite', 'createIndex']),
  index: new Set(['createIndex']),
};

/** The first retry after a lost race waits up to this long, each next one up to twice as long. */
const RETRY_BASE_MS = 100;

/** What a lost race looks like from lancedb; anything else is a real failure. */
export const isCommitConflict = (err: unknown): boolean =>
  /Retryable commit conflict|preempted by concurrent transaction|Too many concurrent writers/i.test(err instanceof Error ? err.message : String(err));

export async function observe(tbl: LanceTable): Promise<Observation> {
  const [version, stats, indices] = await Promise.all([tbl.version(), tbl.stats(), tbl.listIndices()]);
  let unindexedRows = 0;
  for (const ix of indices) unindexedRows += (await tbl.indexStats(ix.name))?.numUnindexedRows ?? 0;
  return {
    atMs: Date.now(),
    version,
    rows: stats.numRows,
    bytes: stats.totalBytes,
    fragments: stats.fragmentStats.numFragments,
    smallFragments: stats.fragmentStats.numSmallFragments,
    smallRows: Math.min(stats.numRows, stats.fragmentStats.numSmallFragments * stats.fragmentStats.lengths.p50),
    unindexedRows,
    indices: indices.length,
  };
}

async function staleIndices(tbl: LanceTable, share: number, rows: number): Promise<{ name: string; column: string; indexType: string }[]> {
  const out: { name: string; column: string; indexType: string }[] = [];
  for (const ix of await tbl.listIndices()) {
    const st = await tbl.indexStats(ix.name);
    const unindexed = st?.numUnindexedRows ?? 0;
    // As a quotient, like the core: share * rows rounds above an exact count (0.07 * 100 > 7).
    if (unindexed > 0 && unindexed / Math.max(1, rows) >= share && ix.columns.length === 1) out.push({ name: ix.name, column: ix.columns[0]!, indexType: ix.indexType });
  }
  return out;
}

/** The same kind of index again, with lancedb's defaults; null for a kind it cannot rebuild from its name. */
function sameKindOfIndex(indexType: string): Index | null {
  switch (indexType.toLowerCase().replace(/[^a-z]/g, '')) {
    case 'btree':
      return Index.btree();
    case 'bitmap':
      return Index.bitmap();
    case 'labellist':
      return Index.labelList();
    case 'fts':
    case 'inverted':
      return Index.fts();
    case 'ivfpq':
      return Index.ivfPq();
    case 'ivfflat':
      return Index.ivfFlat();
    case 'ivfhnswpq':
    case 'hnswpq':
      return Index.hnswPq();
    case 'ivfhnswsq':
    case 'hnswsq':
      return Index.hnswSq();
    default:
      return null;
  }
}

async function versionsPast(tbl: LanceTable, retentionSecs: number): Promise<number> {
  const cutoff = Date.now() - retentionSecs * 1000;
  const latest = await tbl.version();
  return (await tbl.listVersions()).filter((v) => v.version !== latest && new Date(v.timestamp).getTime() < cutoff).length;
}

export function makeAdoptedActivities(deps: ActivityDeps) {
  async function observeTable(input: AdoptedRef): Promise<Observation> {
    // Reports no cost, but takes its share of the CPU while it runs (cpu-meter.ts).
    return costMeter(deps).during(async () => observe(await openAdopted(input.uri)));
  }

  const planAdopted = (input: PlanAdoptedInput): Promise<PlanAdoptedResult> => withCost(deps, () => plan(input));

  async function plan(input: PlanAdoptedInput): Promise<AdoptedPlan> {
    const tbl = await openAdopted(input.uri);
    const obs = await observe(tbl);
    const plan: AdoptedPlan = {
      needed: false,
      reason: '',
      numFragments: obs.fragments,
      numSmallFragments: obs.smallFragments,
      unindexedRows: obs.unindexedRows,
      versionsPastRetention: 0,
      predictedBytes: 0,
      staleIndices: [],
    };
    switch (input.kind) {
      case 'optimize':
        plan.needed = obs.smallFragments >= input.compactAtSmallFragments;
        plan.reason = `${obs.smallFragments} small fragments of ${obs.fragments} (compact at ${input.compactAtSmallFragments})`;
        plan.predictedBytes = predictedRewriteBytes(obs, 'optimize');
        break;
      case 'index':
        plan.staleIndices = (await staleIndices(tbl, input.indexAtUnindexedShare, obs.rows)).map((i) => i.name);
        plan.needed = plan.staleIndices.length > 0;
        plan.reason = plan.needed ? `${obs.unindexedRows} unindexed rows in ${plan.staleIndices.join(', ')}` : `${obs.unindexedRows} unindexed rows of ${obs.rows}`;
        break;
      case 'gc':
        plan.versionsPastRetention = await versionsPast(tbl, input.retentionSecs);
        plan.needed = plan.versionsPastRetention >= input.pruneAtVersions;
        plan.reason = `${plan.versionsPastRetention} versions older than ${input.retentionSecs} s (prune at ${input.pruneAtVersions})`;
        // Lance prunes only through optimize, which compacts first.
        plan.predictedBytes = predictedRewriteBytes(obs, 'gc');
        break;
    }
    return plan;
  }

  async function commitAdopted(input: CommitAdoptedInput): Promise<CommitAdoptedResult> {
    const progress = new ProgressReporter('commitAdopted', deps.faults);
    const cost = costMeter(deps);
    const { db, name } = adoptedLocation(input.uri);
    let conflicts = 0;
    for (;;) {
      try {
        return await cost.during(async () => {
          // A fresh handle every attempt: a retry through the old one would rewrite the
          // version it lost on and lose again.
          const tbl = await openAdopted(input.uri);
          const rows = await tbl.countRows();
          const fromVersion = await tbl.version();
          await progress.point('commit');
          const done = input.kind === 'index' ? await rebuildStale(tbl, input, rows, progress, conflicts) : await optimizeOnce(tbl, input, rows, progress, conflicts);
          const version = await tbl.version();
          // optimize folds new rows into index segments, reading them; a rebuild reads none.
          const measured = await addLanceBytes(deps, cost, lanceTableDir(db, name), fromVersion, version, { ops: OPS_OF[input.kind], replacedIndicesRead: input.kind !== 'index' });
          const result: CommitAdoptedResult = { ...done, rows, conflicts, version, observation: await observe(tbl) };
          return measured ? { ...result, cost: cost.result() } : result;
        });
      } catch (err) {
        if (!isCommitConflict(err)) throw err;
        conflicts++;
        if (conflicts > input.conflictRetries) {
          throw ApplicationFailure.retryable(`commit conflict: lost ${conflicts} races with outside writers (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`, 'CommitConflict', { conflicts });
        }
        const capMs = Math.min(RETRY_BASE_MS * 2 ** (conflicts - 1), input.conflictBackoffMaxSecs * 1000);
        await progress.race(wait(Math.random() * capMs));
      }
    }
  }

  return { observeTable, planAdopted, commitAdopted };
}

type Done = Pick<CommitAdoptedResult, 'fragmentsRemoved' | 'fragmentsAdded' | 'versionsPruned' | 'indicesRebuilt'>;

async function optimizeOnce(tbl: LanceTable, input: CommitAdoptedInput, rows: number, progress: ProgressReporter, attempt: number): Promise<Done> {
  const cleanupOlderThan = new Date(Date.now() - input.retentionSecs * 1000);
  const deadlineMs = Date.now() + optimizeDeadlineMs(rows);
  const r = await progress.bounded({ phase: 'commit', step: `optimize (attempt ${attempt + 1})`, deadlineMs }, tbl.optimize({ cleanupOlderThan }));
  return { fragmentsRemoved: r.compaction.fragmentsRemoved, fragmentsAdded: r.compaction.fragmentsAdded, versionsPruned: r.prune.oldVersionsRemoved, indicesRebuilt: [] };
}

/**
 * Rebuilds the indices that fell behind. Lance folds new rows into an index only through
 * optimize, which compacts first and so loses to every updating writer; a rebuild
 * (createIndex, replace) is a transaction of its own that outside writes do not preempt.
 */
async function rebuildStale(tbl: LanceTable, input: CommitAdoptedInput, rows: number, progress: ProgressReporter, attempt: number): Promise<Done> {
  const rebuilt: string[] = [];
  for (const ix of await staleIndices(tbl, input.indexAtUnindexedShare, rows)) {
    const config = sameKindOfIndex(ix.indexType);
    if (config === null) continue;
    const deadlineMs = Date.now() + indexDeadlineMs(rows, ix.indexType.toLowerCase());
    await progress.bounded({ phase: 'commit', step: `rebuild index ${ix.name} (attempt ${attempt + 1})`, deadlineMs }, tbl.createIndex(ix.column, { config, name: ix.name, replace: true }));
    rebuilt.push(ix.name);
  }
  return { fragmentsRemoved: 0, fragmentsAdded: 0, versionsPruned: 0, indicesRebuilt: rebuilt };
}
