import { arrow, CorruptArrowFileError, readIpcFileBytes, type ArrowTable } from '../src/storage/arrow';
import { conditionalUpsert, lanceTableDir, openLanceTable, openOrCreateLanceTable } from '../src/storage/lance-table';
import { readSealed } from '../src/storage/generation-store';
import { wantsKeyIndex } from '../src/storage/merge-join';
import { giveBackCarried } from '../src/storage/scratch';
import { readTableMeta } from '../src/storage/table-meta';
import { commitReservation, ridersReservation, withReservation } from './memory-reservations';
import type { CommitMergeInput, CommitResult, PreparedMerge } from './contract';
import { mergeDeadlineMs } from './deadlines';
import type { ActivityDeps } from './deps';
import { fail, isNotFound } from './failures';
import { addLanceBytes } from './lance-cost';
import { prepare } from './prepare-merge';
import { runRiders } from './ride-maintenance';
import { ProgressReporter } from './progress';
import { costMeter, type CostMeter } from './unit-cost';

// The commit of a merge, run while holding the table's turn. Idempotent by
// construction: the upsert replaces a row only with one of higher `_seq`, so a retry
// after a commit whose result was lost, or a late attempt of a presumed-dead worker,
// changes no rows. `rows` in the result counts rows inserted or updated by THIS call.

/** A batch to merge, with its IPC file bytes when this worker still holds them (prepared-cache.ts) or read them checked: Lance is given those bytes as they are. */
interface Batch {
  table: ArrowTable;
  ipc?: Buffer;
}

/** A prepared batch this worker does not hold, read from its file (checked against its checksum, so its bytes go to Lance as they are). */
async function readBatchFile(file: string, cost: CostMeter): Promise<Batch> {
  const { table, bytes } = await readIpcFileBytes(file);
  cost.read(bytes.byteLength);
  return { table, ipc: bytes };
}

/**
 * A prepared batch from disk. Batches are written without fsync (prepare-merge.ts), so
 * after an OS crash one can be missing or fail its checksum: it is then prepared again
 * here, from its generations, inside the turn (slower, but the unit is not held for an
 * operator; a generation that is itself missing or corrupt still fails the commit).
 */
async function readPrepared(deps: ActivityDeps, input: CommitMergeInput, p: PreparedMerge, progress: ProgressReporter, cost: CostMeter): Promise<Batch> {
  const file = p.preparedPath as string;
  try {
    return await readBatchFile(file, cost);
  } catch (err) {
    if (!isNotFound(err) && !(err instanceof CorruptArrowFileError)) throw err;
    deps.log?.(`commitMerge ${input.table} ${p.shard} ${p.fromSeq}..${p.toSeq}: prepared batch ${file} ${isNotFound(err) ? 'is missing' : 'is corrupt'}; preparing it again`);
    const again = await prepare(deps, { table: input.table, key: input.key, shard: p.shard, fromSeq: p.fromSeq, toSeq: p.toSeq }, progress, cost);
    if (!again.preparedPath) return { table: new arrow.Table() };
    const batch = deps.preparedCache?.take(again.preparedPath) ?? (await readBatchFile(again.preparedPath, cost));
    progress.report({ phase: 'commit', step: 'read-prepared' });
    return batch;
  }
}

export function makeCommitMerge(deps: ActivityDeps) {
  return async function commitMerge(input: CommitMergeInput): Promise<CommitResult> {
    // Its reservation is held while it commits; a direct merge's bytes are its generation's size.
    const bytes = [input.prepared, ...(input.more ?? [])].reduce((n, p) => n + p.bytes, 0);
    // A scan of every shard, as a preparation makes (prepare-merge.ts): a direct merge has
    // no preparation to make it. It runs beside the commit, not after it: the table takes
    // it as made any time after the turn's grant (src/policy/events.ts), and after the
    // commit its file reads queued behind the worker's preparations (50-60 ms of the
    // first commit of a bench run, on the critical path).
    const scanning = readSealed(deps.dataRoot, input.table);
    scanning.catch(() => undefined); // awaited below; a failure is the activity's, after the commit
    const cost = costMeter(deps);
    const progress = new ProgressReporter('commitMerge', deps.faults);
    const maintain = input.maintain;
    const { r, measured, maintained } = await withReservation(deps, commitReservation(bytes) + ridersReservation(Object.keys(maintain ?? {})), async () => {
      const c = await cost.during(() => commit(deps, input, progress, cost));
      // The maintenance riding the turn measures its own cost (it has its own history entries).
      return { ...c, maintained: maintain ? await runRiders(deps, input.table, maintain, progress) : undefined };
    });
    const t = performance.now();
    const scan = await cost.during(() => scanning);
    const version = Math.max(r.version, maintained?.optimize?.version ?? 0);
    return { ...r, version, scan, ...(r.steps ? { steps: { ...r.steps, scanMs: Math.round(performance.now() - t) } } : {}), ...(measured ? { cost: cost.result() } : {}), ...(maintained ? { maintained } : {}) };
  };
}

/**
 * A direct merge (one small generation, no preparation activity; src/policy/units.ts):
 * its preparation runs here, in the turn. For a generation of distinct keys that is
 * reading and checking the file; repeated keys are reduced to the newest row each.
 */
async function prepareDirect(deps: ActivityDeps, input: CommitMergeInput, p: PreparedMerge, progress: ProgressReporter, cost: CostMeter): Promise<Batch> {
  const done = await prepare(deps, { table: input.table, key: input.key, shard: p.shard, fromSeq: p.fromSeq, toSeq: p.toSeq }, progress, cost);
  if (!done.preparedPath) return { table: new arrow.Table() };
  return deps.preparedCache?.take(done.preparedPath) ?? (await readBatchFile(done.preparedPath, cost));
}

/**
 * Reads every batch of the turn (from this worker's memory when it prepared them) as one
 * table; `held`: the bytes the table is made of, given back (scratch.ts) once Lance is done.
 */
async function readBatches(deps: ActivityDeps, input: CommitMergeInput, all: PreparedMerge[], progress: ProgressReporter, cost: CostMeter): Promise<Batch & { held: Buffer[] }> {
  const batches: Batch[] = [];
  for (const p of all) {
    if (p.direct) {
      const b = await prepareDirect(deps, input, p, progress, cost);
      if (b.table.numRows > 0) batches.push(b);
      continue;
    }
    if (!p.preparedPath || p.rows === 0) continue;
    const b = deps.preparedCache?.take(p.preparedPath) ?? (await readPrepared(deps, input, p, progress, cost));
    if (b.table.numRows > 0) batches.push(b);
  }
  const held = batches.flatMap((b) => (b.ipc ? [b.ipc] : []));
  if (batches.length <= 1) return { ...(batches[0] ?? { table: new arrow.Table() }), held };
  // Shards never share a key, so the batches together still have one row per key; all
  // generations of a table have the same columns in the same order (fixed at seal).
  const schema = (batches[0] as Batch).table.schema;
  return { table: new arrow.Table(schema, batches.flatMap((b) => b.table.batches.map((r) => new arrow.RecordBatch(schema, r.data)))), held };
}

/** The commit; `measured`: false when the bytes Lance wrote could not be read (lance-cost.ts). */
async function commit(deps: ActivityDeps, input: CommitMergeInput, progress: ProgressReporter, cost: CostMeter): Promise<{ r: CommitResult; measured: boolean }> {
  const meta = await readTableMeta(deps.dataRoot, input.table);
  if (input.key !== meta.key) throw fail('InvalidInput', `key ${input.key} is not table ${input.table}'s key ${meta.key}`);
  const all = [input.prepared, ...(input.more ?? [])];
  const shards = new Set(all.map((p) => p.shard));
  if (shards.size !== all.length) throw fail('InvalidInput', `commitMerge: two batches of one shard in one commit (${all.map((p) => p.shard).join(', ')})`);
  progress.report({ phase: 'commit', step: 'read-prepared' });
  let t = performance.now();
  const { table: batch, ipc, held } = await readBatches(deps, input, all, progress, cost);
  const readMs = performance.now() - t;
  if (batch.numRows === 0) {
    // An empty merge would still create a version: skip it.
    const tbl = await openLanceTable(deps.dataRoot, input.table);
    return { r: { version: tbl ? await tbl.version() : 0, rows: 0 }, measured: true };
  }
  progress.report({ phase: 'commit', step: 'open' });
  t = performance.now();
  const tbl = await openOrCreateLanceTable(deps.dataRoot, input.table, meta.key, batch.schema);
  const before = await tbl.version();
  const openMs = performance.now() - t;
  await progress.point('commit');

  const budget = mergeDeadlineMs(batch.numRows);
  const deadlineMs = Date.now() + budget;
  const t0 = performance.now();
  const upsert = conditionalUpsert(tbl, meta.key, batch, { timeoutMs: budget, ...(ipc ? { ipc } : {}) });
  // Lance reads the batches' memory until its call settles, which the bounded wait below may not see.
  const giveBack = () => held.forEach(giveBackCarried);
  upsert.then(giveBack, giveBack);
  const r = await progress.bounded({ phase: 'commit', step: 'mergeInsert', deadlineMs }, upsert);
  deps.faults?.afterMergeInsert?.({ attempt: progress.attempt, version: r.version });
  const ranges = all.map((p) => `${p.shard} ${p.fromSeq}..${p.toSeq}`).join(', ');
  deps.log?.(`commitMerge ${input.table} ${ranges}: version ${r.version}, ${r.inserted} inserted, ${r.updated} updated, ${r.join ?? 'scan'} join`);
  const lanceMs = Math.round(performance.now() - t0);
  // We hold the turn, so every version since `before` is this upsert's (one, unless Lance retried).
  const measured = await addLanceBytes(deps, cost, lanceTableDir(deps.dataRoot, input.table), before, r.version);
  const steps = { readMs: Math.round(readMs), openMs: Math.round(openMs), encodeMs: Math.round(r.encodeMs ?? 0), scanMs: 0 };
  const keyIndexMissing = r.keyIndexed === false && wantsKeyIndex((r.tableRows ?? 0) + r.inserted);
  return { r: { version: r.version, rows: r.inserted + r.updated, lanceMs, steps, ...(r.join ? { join: r.join } : {}), ...(keyIndexMissing ? { keyIndexMissing: true as const } : {}) }, measured };
}
