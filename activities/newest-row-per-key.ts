import { arrow, type ArrowTable, type Schema, type Vector } from '../src/storage/arrow';
import { gatherColumn, SHIFT } from './gather';
import { IntKeyTable } from './int-key-table';

// Deduplication for a merge: feed tables in seq order; for every key the row fed last
// wins (a later generation, or a later row of the same generation). The source batch
// of a mergeInsert must have unique keys, or Lance refuses it (a matched duplicate) or
// inserts it twice (an unmatched one).

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Rows hashed between two yields of addYielding: a few ms of work. */
const SLICE_ROWS = 16_384;

/** Lets timers and I/O callbacks (the Temporal bridge's among them) run before going on. */
const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

// Map keys for columns IntKeyTable does not take (strings): the same value always maps
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

/** Rows from..to-1 of one source into the table (a plain function: hot loops optimise better outside generators). */
function hashRows(ints: IntKeyTable, halves: (row: number, out: Int32Array) => void, base: number, from: number, to: number): void {
  const kv = new Int32Array(2);
  for (let i = from; i < to; i++) {
    halves(i, kv);
    ints.set(kv[0] as number, kv[1] as number, base + i);
  }
}

export class NewestRowPerKey {
  private readonly sources: ArrowTable[] = [];
  private readonly winner = new Map<unknown, number>();
  private ints: IntKeyTable | null = null;
  private intKeys: boolean | undefined;
  private schemaRef: Schema | undefined;
  private rowsSeen = 0;

  constructor(private readonly key: string) {}

  get size(): number {
    return this.ints ? this.ints.size : this.winner.size;
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
    for (const _ of this.addInSlices(table)) {
      // all at once
    }
  }

  /**
   * `add` in slices of SLICE_ROWS rows, for a caller that lets other work run between
   * them (prepare-merge.ts: a worker's event loop also carries the commits holding
   * turns and every workflow task; one 100k-row generation is ~30 ms of hashing).
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
    const col = table.getChild(this.key)!;
    const halves = this.intKeys === false ? null : intHalves(col);
    // All sources share one schema, so the first decides which table is used.
    this.intKeys ??= halves !== null;
    if (halves) {
      this.ints ??= new IntKeyTable(table.numRows);
      const ints = this.ints;
      const base = s * SHIFT;
      const n = table.numRows;
      for (let from = 0; from < n; from += SLICE_ROWS) {
        if (from > 0) yield;
        hashRows(ints, halves, base, from, Math.min(n, from + SLICE_ROWS));
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

  /** One table holding the winning rows, in the reference schema; null when empty. */
  build(): ArrowTable | null {
    const it = this.buildInSlices();
    for (let r = it.next(); ; r = it.next()) if (r.done) return r.value;
  }

  /** `build`, letting other work run between columns (see addYielding). */
  async buildYielding(): Promise<ArrowTable | null> {
    const it = this.buildInSlices();
    for (let r = it.next(); ; r = it.next()) {
      if (r.done) return r.value;
      await yieldToEventLoop();
    }
  }

  private *buildInSlices(): Generator<void, ArrowTable | null> {
    const schema = this.schemaRef;
    if (!schema || this.size === 0) return null;
    const picks: ArrayLike<number> = this.ints ? this.ints.picks : [...this.winner.values()];
    const columns: Record<string, Vector> = {};
    for (const field of schema.fields) {
      if (Object.keys(columns).length > 0) yield;
      columns[field.name] = gatherColumn(
        field,
        this.sources.map((t) => t.getChild(field.name)!),
        picks,
      );
    }
    // new Table(columns) aligns chunk boundaries across columns; then put the original
    // fields (nullability, key non-null) back on.
    const loose = new arrow.Table(columns);
    return new arrow.Table(
      schema,
      loose.batches.map((b) => new arrow.RecordBatch(schema, b.data)),
    );
  }
}
