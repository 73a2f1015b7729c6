import { SEQ_COLUMN, validateShardName } from '../messages/names';
import { arrow, encodeIpcFilePending, type ArrowTable } from './arrow';
import { joinLoc } from './location';
import { storageAt } from './open-storage';
import type { PatchedBytes } from './storage';
import { readGcFloor } from './gc-floor';
import { checkTableSchema } from './table-schema';
import { offerSealedHint } from './sealed-hint';
import { generationFile, parseGenerationName, sealedFile, shardDir, tableLayout } from './layout';
import { checkKeyColumn, tableFromRows, withSeqColumn, withSeqSchema, type Row } from './records';
import { firstMisrouted } from './route-column';
import { withScratch } from './scratch';
import type { TableFiles } from './table-files';
import { openTable, type TableHandle } from './table-handle';
import type { TableMeta } from './table-meta';

export { createTableMeta, readTableMeta, listTables, TableNotFoundError, TableExistsError, type TableMeta } from './table-meta';

// The generation store: per shard, immutable generation files numbered by a dense seq.
// gc deletes merged generation files only after raising the shard's floor (GC.json),
// so a snapshot never sees the sealed-through seq drop (see readShardSealed).

export interface ShardSealed {
  shard: string;
  sealedThroughSeq: number;
  revision: number;
}

/** What the snapshot activity returns: every shard's SEALED.json. */
export interface SnapshotResult {
  /** Each shard as its SEALED.json says. */
  shards: { shard: string; sealedThroughSeq: number; revision: number }[];
  /** Sum of the shards' revisions (each seal adds 1 to its shard's): grows with every seal. */
  revision: number;
}

export interface SealResult {
  seq: number;
  revision: number;
  path: string;
  rows: number;
  bytes: number;
}

export interface GenerationEntry {
  seq: number;
  path: string;
  /** Size in bytes, or null when the file is missing. */
  bytes: number | null;
}

// What is sealed is what exists: a generation is sealed the moment its file is linked
// into place (after fsync) or, on S3, its object is created with If-None-Match: *, so a
// seal costs one durable write (storage.ts putIfAbsent). SEALED.json is a
// hint written after each seal (not fsynced: losing it costs a few stats), and
// GC.json's floor covers what gc deleted. The sealed-through seq of a shard is the
// highest seq reachable from max(hint, floor) through consecutive existing files. A
// seq is only claimed as sealed-through + 1 by creating its file exclusively, so files
// never have gaps above the floor.
// `revision` is the number of seals, which equals the seq (both start at 0 and every
// seal raises each by one); SEALED.json keeps the field for stores written before.

async function readHint(files: TableFiles, file: string): Promise<number> {
  const bytes = await files.storage.read(file);
  if (bytes === null) return 0;
  const text = bytes.toString('utf8');
  let v: Partial<ShardSealed>;
  try {
    v = JSON.parse(text) as Partial<ShardSealed>;
  } catch {
    return 0; // torn by a crash (it is not fsynced): probe from the gc floor instead
  }
  if (!Number.isSafeInteger(v.sealedThroughSeq) || (v.sealedThroughSeq as number) < 0) {
    throw new Error(`${file}: invalid contents ${JSON.stringify(text)}`);
  }
  return v.sealedThroughSeq as number;
}

const exists = async (files: TableFiles, file: string): Promise<boolean> => (await files.storage.stat(file)) !== null;

/**
 * After the first probe that finds a file, the next ones go this many at once. One at a
 * time, probes behind a writer that seals every two round trips of an object store keep
 * finding one more file until the writer pauses; a writer seals at most once per round
 * trip, so a window of two or more catches up with it.
 */
const PROBE_WINDOW = 8;

/** The highest seq reachable from `seq` through consecutive existing generation files. */
async function lastConsecutive(files: TableFiles, shard: string, seq: number): Promise<number> {
  const probe = (s: number) => exists(files, generationFile(files.layout, shard, s));
  // An idle shard's hint is current: one probe, which finds nothing.
  if (!(await probe(seq + 1))) return seq;
  for (let last = seq + 1; ; last += PROBE_WINDOW) {
    const found = await Promise.all(Array.from({ length: PROBE_WINDOW }, (_, i) => probe(last + 1 + i)));
    // Files never have gaps above the floor: the first missing one ends the run. One found
    // past a missing one was sealed after that probe, and is left to the next look.
    const run = found.indexOf(false);
    if (run !== -1) return last + run;
  }
}

export async function readShardSealed(files: TableFiles, shard: string): Promise<ShardSealed> {
  const l = files.layout;
  let seq = await readHint(files, sealedFile(l, shard));
  for (;;) {
    seq = await lastConsecutive(files, shard, seq);
    // Read after probing: files gc deleted while we probed are below the floor it
    // recorded before deleting them, so the floor covers the gap.
    const floor = await readGcFloor(files, shard);
    if (floor <= seq) break;
    seq = floor;
  }
  return { shard, sealedThroughSeq: seq, revision: seq };
}

export async function readSealed(root: string, table: string): Promise<SnapshotResult> {
  const h = await openTable(root, table);
  const shards = await Promise.all(h.meta.shards.map((s) => readShardSealed(h, s)));
  // The sum, not the max: every seal raises exactly one shard's revision by one, so the
  // sum grows with every seal of any shard (the max would not).
  return { shards, revision: shards.reduce((sum, s) => sum + s.revision, 0) };
}

function assertShard(meta: TableMeta, shard: string): void {
  validateShardName(shard);
  if (!meta.shards.includes(shard)) {
    throw new Error(`shard ${shard} is not a shard of table ${meta.name} (shards: ${meta.shards.join(', ')})`);
  }
}

// Invariant: a key lives in exactly one shard. A row routed elsewhere could later be
// overwritten by an older row of another shard with a higher seq, so refuse it.
function assertRouting(table: ArrowTable, meta: TableMeta, shard: string): void {
  if (meta.shards.length === 1) return;
  const keys = table.getChild(meta.key);
  if (!keys) return;
  const bad = firstMisrouted(keys, meta.shards, shard);
  if (bad) throw new Error(`key ${String(bad.key)} belongs to shard ${bad.owner}, not ${shard} (keys are routed with shardOfKey)`);
}

export interface SealOptions {
  /** table.json as the caller read it: name, key and shards never change. */
  meta?: TableMeta;
}

/** sealInto for a caller holding only the root and the table's name (and maybe its table.json). */
export async function sealGeneration(root: string, table: string, shard: string, rows: ArrowTable | readonly Row[], opts: SealOptions = {}): Promise<SealResult> {
  return sealInto(await openTable(root, table, opts.meta), shard, rows);
}

/** A seq is claimed by creating its file; this many lost races in a row is an error. */
const MAX_CLAIM_ATTEMPTS = 1000;

/**
 * Seal one generation: seq = sealedThroughSeq + 1, and the file of that seq is created
 * durably only if it does not exist yet (Storage.putIfAbsent), so racing sealers in
 * other processes cannot take one seq twice: the loser probes again and retries with
 * the next seq (its _seq column changes, so it encodes again). Sealers in one process
 * queue per shard instead of racing. A crash before the link leaves only a temp file
 * (gc removes it); the same seq is taken again.
 */
export async function sealInto(h: TableHandle, shard: string, rows: ArrowTable | readonly Row[]): Promise<SealResult> {
  const { meta, name: table, layout: l, storage: store } = h;
  assertShard(meta, shard);
  let input: ArrowTable;
  if (Array.isArray(rows)) input = tableFromRows(rows as readonly Row[], meta.key);
  else if (rows instanceof arrow.Table) input = rows;
  else throw new Error('rows: expected an array of records or an Arrow Table loaded through src/storage/arrow.ts');
  if (input.numRows === 0) throw new Error('no rows to seal');
  checkKeyColumn(input, meta.key, `table ${table} shard ${shard}`);
  assertRouting(input, meta, shard);
  const ref = await checkTableSchema(h, withSeqSchema(input.schema, meta.key));
  // Same column order in every generation, so prepared batches all match the Lance table.
  const order = ref.fields.filter((f) => f.name !== SEQ_COLUMN).map((f) => input.schema.fields.findIndex((x) => x.name === f.name));
  // A writer that already sends the table's order (the usual case) skips the copy of
  // every batch's structure (~0.07 ms of a 2,500-row seal, profiled).
  const ordered = order.length === input.schema.fields.length && order.every((at, i) => at === i) ? input : input.selectAt(order);

  const dir = shardDir(l, shard);
  return inShardQueue(dir, async () => {
    if (!lastSealed.has(dir)) await store.ensureDir(dir);
    for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt++) {
      // What this process sealed last is usually still the newest: try the next seq
      // without probing; a lost race falls back to the full probe.
      const mine = attempt === 0 ? lastSealed.get(dir) : undefined;
      const seq = (mine ?? (await readShardSealed(h, shard)).sealedThroughSeq) + 1;
      const file = generationFile(l, shard, seq);
      const bytes = await withScratch(async (alloc) => {
        let size = 0;
        const encode = async (): Promise<PatchedBytes> => {
          // Its sha256 is computed by the store, beside the write (storage.ts PatchedBytes).
          const encoded = await encodeIpcFilePending(withSeqColumn(ordered, seq, meta.key, alloc), alloc);
          size = encoded.bytes.byteLength;
          return encoded;
        };
        return (await store.putIfAbsent(file, encode)) ? size : null;
      });
      if (bytes === null) continue;
      lastSealed.set(dir, seq);
      // Written every seal (in the background): a generation file lost below it is then
      // reported missing by the merge that needs it, instead of silently ending what
      // counts as sealed.
      offerSealedHint(store, sealedFile(l, shard), seq);
      return { seq, revision: seq, path: file, rows: ordered.numRows, bytes };
    }
    throw new Error(`${dir}: lost the race for a seq ${MAX_CLAIM_ATTEMPTS} times in a row to other sealers`);
  });
}

/** What this process sealed last per shard directory. */
const lastSealed = new Map<string, number>();

/** Per shard directory, the tail of this process's queue of seals. */
const queues = new Map<string, Promise<unknown>>();

function inShardQueue<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const run = (queues.get(dir) ?? Promise.resolve()).then(fn, fn);
  const tail = run.catch(() => undefined);
  queues.set(dir, tail);
  void tail.then(() => {
    if (queues.get(dir) === tail) queues.delete(dir);
  });
  return run;
}

/** The generation files fromSeq..toSeq in seq order; missing ones have bytes null. */
export async function listGenerations(root: string, table: string, shard: string, fromSeq: number, toSeq: number): Promise<GenerationEntry[]> {
  const l = tableLayout(root, table);
  const out: GenerationEntry[] = [];
  for (let seq = fromSeq; seq <= toSeq; seq++) {
    const file = generationFile(l, shard, seq);
    const st = await storageAt(root).stat(file);
    out.push({ seq, path: file, bytes: st ? st.size : null });
  }
  return out;
}

/** Every generation file present in a shard's directory (any seq), sorted by seq. */
export async function scanGenerationFiles(root: string, table: string, shard: string): Promise<{ seq: number; path: string }[]> {
  const dir = shardDir(tableLayout(root, table), shard);
  const out: { seq: number; path: string }[] = [];
  for (const { name, isDir } of await storageAt(root).list(dir)) {
    const seq = isDir ? null : parseGenerationName(name);
    if (seq !== null) out.push({ seq, path: joinLoc(dir, name) });
  }
  return out.sort((a, b) => a.seq - b.seq);
}
