import { arrow, encodeIpcFilePending, type ArrowTable, type RecordBatch, type Schema, type Vector } from '../src/storage/arrow';
import { fastHashReady } from '../src/storage/fast-hash';
import type { PatchedBytes } from '../src/storage/storage';
import { encodeWinners, type WinnerPart } from './encode-winners';
import { takeRows } from './take-rows';
import { PartitionedIntKeys } from './int-key-table';
import { yieldToEventLoop } from '../src/util/event-loop';
import type { Alloc } from '../src/storage/scratch';

// Deduplication for a merge: feed tables in seq order; for every key the row fed last
// wins (a later generation, or a later row of the same generation). The source batch
// of a mergeInsert must have unique keys, or Lance refuses it (a matched duplicate) or
// inserts it twice (an unmatched one).

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A row of the Map path is kept as source * SHIFT + row. */
const SHIFT = 2 ** 32;

/** Rows hashed between two yields of addYielding: a few ms of work. */
const SLICE_ROWS = 16_384;

/** Runs a generator to its end (the all-at-once form of a sliced method). */
function drain<T>(it: Generator<void, T>): T {
  for (;;) {
    const r = it.next();
    if (r.done) return r.value;
  }
}


// Map keys for columns PartitionedIntKeys does not take (strings): the same value always maps
// to the same JS key, which is all dedup needs.
function keyReader(vec: Vector): (row: number) => unknown {
  if (vec.nullCount === 0 && (arrow.DataType.isInt(vec.type) || arrow.DataType.isFloat(vec.type))) {
    const values = vec.toArray() as ArrayLike<number | bigint>;
    return (i) => {
      const v = values[i] as number | bigint;
      return typeof v === 'bigint' && v <= MAX_SAFE && v >= -MAX_SAFE ? Number(v) : v;
    };
  }
  return (i) => vec.get(i) as unknown;
}

/** Integer key columns without nulls as [lo, hi] Int32 halves per row, without allocating; null for others. */
function intHalves(vec: Vector): ((row: number, out: Int32Array) => void) | null {
  if (vec.nullCount !== 0 || !arrow.DataType.isInt(vec.type)) return null;
  const values = vec.toArray() as ArrayLike<number | bigint> & ArrayBufferView;
  if (vec.type.bitWidth === 64) {
    const halves = new Int32Array(values.buffer, values.byteOffset, values.length * 2);
    return (i, out) => {
      out[0] = halves[2 * i] as number;
      out[1] = halves[2 * i + 1] as number;
    };
  }
  // Narrower ints: the value itself; hi keeps unsigned 32-bit values apart from negatives.
  return (i, out) => {
    const v = values[i] as number;
    out[0] = v | 0;
    out[1] = v < 0 ? -1 : 0;
  };
}

/** Rows from..to-1 of source `s` into the partitions (a plain function: hot loops optimise better outside generators). */
function feedRows(ints: PartitionedIntKeys, halves: (row: number, out: Int32Array) => void, s: number, from: number, to: number): void {
  const kv = new Int32Array(2);
  for (let i = from; i < to; i++) {
    halves(i, kv);
    ints.add(kv[0] as number, kv[1] as number, s, i);
  }
}

export interface EncodedWinners {
  pending: PatchedBytes;
  rows: number;
  /** Where the winners were gathered: straight into the file, or into columns then encoded (a column encode-winners.ts does not place). */
  gathered: 'into the file' | 'then encoded';
}

export class NewestRowPerKey {
  private readonly sources: ArrowTable[] = [];
  /** Keys of columns PartitionedIntKeys does not take: key -> source * SHIFT + row. */
  private readonly winner = new Map<unknown, number>();
  private ints: PartitionedIntKeys | null = null;
  private intKeys: boolean | undefined;
  private schemaRef: Schema | undefined;
  private rowsSeen = 0;
  /** Per source, 1 for each winning row; dropped by the next add. */
  private marked: { keep: Uint8Array[]; keys: number } | null = null;

  /** `expectedSources`: how many tables of about the first one's size will be fed (sizes the partitions). */
  constructor(
    private readonly key: string,
    private readonly expectedSources = 1,
  ) {}

  /** Distinct keys fed so far. */
  get size(): number {
    return drain(this.markedInSlices()).keys;
  }

  get rowsRead(): number {
    return this.rowsSeen;
  }

  /** Schema of the first table fed; later tables must match it (checked by the caller). */
  get schema(): Schema | undefined {
    return this.schemaRef;
  }

  /** The one table fed, when its keys were all distinct: it is its own newest-row-per-key. */
  get single(): ArrowTable | null {
    return this.sources.length === 1 && this.size === this.rowsSeen ? (this.sources[0] as ArrowTable) : null;
  }

  add(table: ArrowTable): void {
    drain(this.addInSlices(table));
  }

  /**
   * `add` in slices of SLICE_ROWS rows, for a caller that lets other work run between
   * them (prepare-merge.ts: a worker's event loop also carries the commits holding
   * turns and every workflow task).
   */
  async addYielding(table: ArrowTable): Promise<void> {
    for (const _ of this.addInSlices(table)) await yieldToEventLoop();
  }

  private *addInSlices(table: ArrowTable): Generator<void> {
    if (table.numRows === 0) return;
    this.schemaRef ??= table.schema;
    const s = this.sources.length;
    if (s >= 2 ** 20) throw new Error('too many source tables in one merge');
    this.sources.push(table);
    this.marked = null;
    const col = table.getChild(this.key)!;
    const halves = this.intKeys === false ? null : intHalves(col);
    // All sources share one schema, so the first decides which way keys are kept.
    this.intKeys ??= halves !== null;
    if (this.intKeys && !halves) throw new Error(`key column ${this.key} of source ${s} is not an integer column without nulls, as the first source's was`);
    if (halves) {
      this.ints ??= new PartitionedIntKeys(table.numRows * this.expectedSources);
      const ints = this.ints;
      const n = table.numRows;
      for (let from = 0; from < n; from += SLICE_ROWS) {
        if (from > 0) yield;
        feedRows(ints, halves, s, from, Math.min(n, from + SLICE_ROWS));
      }
    } else {
      const keys = keyReader(col);
      for (let i = 0; i < table.numRows; i++) {
        if (i > 0 && i % SLICE_ROWS === 0) yield;
        this.winner.set(keys(i), s * SHIFT + i);
      }
    }
    this.rowsSeen += table.numRows;
  }

  private *markedInSlices(): Generator<void, { keep: Uint8Array[]; keys: number }> {
    if (this.marked) return this.marked;
    const keep = this.sources.map((t) => new Uint8Array(t.numRows));
    let keys = 0;
    if (this.ints) {
      keys = yield* this.ints.markWinners(keep, SLICE_ROWS);
    } else {
      for (const p of this.winner.values()) {
        const s = Math.floor(p / SHIFT);
        (keep[s] as Uint8Array)[p - s * SHIFT] = 1;
      }
      keys = this.winner.size;
    }
    this.marked = { keep, keys };
    return this.marked;
  }

  /**
   * One table holding the winning rows, in the reference schema; null when empty. Rows
   * come source by source, each source's winners in their order there: a source whose
   * rows all win (the newest generation of a range, usually) is used as it is, without a
   * copy, so the result may share the sources' memory (prepare-merge.ts encodes it
   * before its scratch memory is reused). The others are copied in row order, which
   * reads each source front to back (gathering in key order jumped between sources at
   * random: 115-200 ms for 390k winners of 600k rows, against ~40 ms now).
   */
  build(): ArrowTable | null {
    return drain(this.buildInSlices(undefined));
  }

  /**
   * `build`, letting other work run between slices of columns (see addYielding). With
   * `alloc` (scratch.ts) the copied columns live in that memory: the table is then only
   * valid while it is lent.
   */
  buildYielding(alloc?: Alloc): Promise<ArrowTable | null> {
    return runYielding(this.buildInSlices(alloc));
  }

  /** Per source, the rows that win, ascending (null: every row wins). */
  private *winnersBySource(): Generator<void, (Float64Array | null)[]> {
    const { keep } = yield* this.markedInSlices();
    return keep.map((k) => {
      let n = 0;
      for (let i = 0; i < k.length; i++) n += k[i] as number;
      if (n === k.length) return null;
      const rows = new Float64Array(n);
      for (let i = 0, o = 0; o < n; i++) if (k[i] === 1) rows[o++] = i;
      return rows;
    });
  }

  /** The sources and, per source, the rows that win; null when nothing was fed. */
  private *partsInSlices(): Generator<void, { schema: Schema; parts: WinnerPart[] } | null> {
    const schema = this.schemaRef;
    if (!schema || this.rowsSeen === 0) return null;
    const winners = yield* this.winnersBySource();
    return { schema, parts: this.sources.map((source, s) => ({ source, rows: winners[s] as Float64Array | null })) };
  }

  private *buildInSlices(alloc: Alloc | undefined): Generator<void, ArrowTable | null> {
    const all = yield* this.partsInSlices();
    if (!all) return null;
    const { schema, parts } = all;
    const batches: RecordBatch[] = [];
    for (const { source, rows } of parts) {
      if (rows === null) {
        // Put the reference fields (nullability, key non-null) on its batches.
        for (const b of source.batches) batches.push(new arrow.RecordBatch(schema, b.data));
        continue;
      }
      if (rows.length === 0) continue;
      const columns: Record<string, Vector> = {};
      for (const field of schema.fields) {
        if (Object.keys(columns).length > 0) yield;
        columns[field.name] = yield* takeRows(field, source.getChild(field.name)!, rows, alloc);
      }
      // new Table(columns) aligns chunk boundaries across columns.
      for (const b of new arrow.Table(columns).batches) batches.push(new arrow.RecordBatch(schema, b.data));
      yield;
    }
    return new arrow.Table(schema, batches);
  }

  /**
   * The winning rows as a checksummed IPC file (digest pending) in memory from `alloc`,
   * the bytes that encoding build()'s table would give: gathered straight into the file
   * where every column allows (encode-winners.ts), else built and encoded. Lets other
   * work run between slices (see addYielding). null when nothing was fed.
   */
  async encodeYielding(alloc: Alloc): Promise<EncodedWinners | null> {
    await fastHashReady;
    const placed = await runYielding(this.placedInSlices(alloc));
    if (placed !== 'not placeable') return placed && { ...placed, gathered: 'into the file' };
    const table = await this.buildYielding();
    return table && { pending: await encodeIpcFilePending(table, alloc), rows: table.numRows, gathered: 'then encoded' };
  }

  private *placedInSlices(alloc: Alloc): Generator<void, { pending: PatchedBytes; rows: number } | null | 'not placeable'> {
    const all = yield* this.partsInSlices();
    if (!all) return null;
    return (yield* encodeWinners(all.schema, all.parts, alloc)) ?? 'not placeable';
  }
}

/** Runs a sliced generator to its end, yielding to the event loop between slices. */
async function runYielding<T>(it: Generator<void, T>): Promise<T> {
  for (let r = it.next(); ; r = it.next()) {
    if (r.done) return r.value;
    await yieldToEventLoop();
  }
}
