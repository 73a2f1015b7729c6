import { arrow, type ArrowTable, type Schema, type Vector } from '../src/storage/arrow';
import { gatherColumn, SHIFT } from './gather';

// Deduplication for a merge: feed tables in seq order; for every key the row fed last
// wins (a later generation, or a later row of the same generation). The source batch
// of a mergeInsert must have unique keys, or Lance refuses it (a matched duplicate) or
// inserts it twice (an unmatched one).

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

// Map keys: Int64 keys as numbers when they fit (a Map hashes small numbers much
// faster than bigints), strings and other ints as they are. The same value always
// maps to the same JS key, which is all dedup needs.
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

export class NewestRowPerKey {
  private readonly sources: ArrowTable[] = [];
  private readonly winner = new Map<unknown, number>();
  private schemaRef: Schema | undefined;
  private rowsSeen = 0;

  constructor(private readonly key: string) {}

  get size(): number {
    return this.winner.size;
  }

  get rowsRead(): number {
    return this.rowsSeen;
  }

  /** Schema of the first table fed; later tables must match it (checked by the caller). */
  get schema(): Schema | undefined {
    return this.schemaRef;
  }

  add(table: ArrowTable): void {
    if (table.numRows === 0) return;
    this.schemaRef ??= table.schema;
    const s = this.sources.length;
    if (s >= 2 ** 20) throw new Error('too many source tables in one merge');
    this.sources.push(table);
    const keys = keyReader(table.getChild(this.key)!);
    for (let i = 0; i < table.numRows; i++) this.winner.set(keys(i), s * SHIFT + i);
    this.rowsSeen += table.numRows;
  }

  /** One table holding the winning rows, in the reference schema; null when empty. */
  build(): ArrowTable | null {
    const schema = this.schemaRef;
    if (!schema || this.winner.size === 0) return null;
    const picks = [...this.winner.values()];
    const columns: Record<string, Vector> = {};
    for (const field of schema.fields) {
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
