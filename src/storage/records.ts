import { arrow, type ArrowTable, type DataType, type Schema, type Vector } from './arrow';
import { SEQ_COLUMN } from '../messages/names';
import type { Alloc } from './scratch';

// Turning writer input into the one shape the store keeps: an Arrow table whose key
// column is non-nullable (Lance refuses a nullable primary key) and whose `_seq`
// column is a non-nullable Int64. Int64 because seqs are integers and Lance compares
// `target._seq < source._seq` on it; JS sees the values as bigint.

export type Row = Record<string, unknown>;

const isVectorLike = (v: unknown): v is ArrayLike<number> =>
  v instanceof Float32Array || v instanceof Float64Array || (Array.isArray(v) && v.every((x) => typeof x === 'number'));

// Inference must give the same type for the same column in every generation, or
// generations stop being mergeable: numbers are always Float64, except the key,
// which is always Int64 (so keys never depend on whether a batch had a fraction).
function inferType(column: string, values: readonly unknown[], key: string): DataType {
  const sample = values.find((v) => v !== null && v !== undefined);
  if (sample === undefined) {
    throw new Error(`column ${column} has only nulls; pass an Arrow table to give it a type`);
  }
  if (column === key) {
    if (typeof sample === 'string') return new arrow.Utf8();
    if (typeof sample === 'bigint' || typeof sample === 'number') return new arrow.Int64();
    throw new Error(`key column ${column} must hold integers or strings, got ${typeof sample}`);
  }
  if (typeof sample === 'string') return new arrow.Utf8();
  if (typeof sample === 'bigint') return new arrow.Int64();
  if (typeof sample === 'number') return new arrow.Float64();
  if (typeof sample === 'boolean') return new arrow.Bool();
  if (sample instanceof Date) return new arrow.TimestampMillisecond();
  if (isVectorLike(sample)) {
    // Embeddings: a fixed-size list of float32, what Lance's vector indices expect.
    return new arrow.FixedSizeList(sample.length, new arrow.Field('item', new arrow.Float32(), true));
  }
  throw new Error(`column ${column}: cannot store values of type ${typeof sample}`);
}

function normalise(column: string, value: unknown, type: DataType): unknown {
  if (value === undefined || value === null) return null;
  if (arrow.DataType.isInt(type) && type.bitWidth === 64) {
    if (typeof value === 'number' && !Number.isSafeInteger(value)) {
      throw new Error(`column ${column}: ${value} is not an integer`);
    }
    return BigInt(value as number | bigint);
  }
  if (arrow.DataType.isFixedSizeList(type)) return Array.from(value as ArrayLike<number>);
  return value;
}

/** Build an Arrow table from plain records; columns are the union of the records' keys. */
export function tableFromRows(rows: readonly Row[], key: string): ArrowTable {
  if (rows.length === 0) throw new Error('no rows to seal');
  const names: string[] = [];
  const seen = new Set<string>();
  for (const row of rows) {
    for (const name of Object.keys(row)) {
      if (!seen.has(name)) {
        seen.add(name);
        names.push(name);
      }
    }
  }
  const columns: Record<string, Vector> = {};
  for (const name of names) {
    if (name === SEQ_COLUMN) continue;
    const values = rows.map((r) => r[name]);
    const type = inferType(name, values, key);
    columns[name] = arrow.vectorFromArray(
      values.map((v) => normalise(name, v, type)),
      type,
    ) as Vector;
  }
  return new arrow.Table(columns);
}

const KEY_TYPES = (t: DataType): boolean => arrow.DataType.isInt(t) || arrow.DataType.isUtf8(t) || arrow.DataType.isLargeUtf8(t);

/** Check the key column: present, integer or string typed, no nulls. Throws a clear error. */
export function checkKeyColumn(table: ArrowTable, key: string, where: string): void {
  const field = table.schema.fields.find((f) => f.name === key);
  if (!field) throw new Error(`${where}: key column ${key} is missing (columns: ${table.schema.names.join(', ')})`);
  if (!KEY_TYPES(field.type)) throw new Error(`${where}: key column ${key} has type ${field.type}; use an integer or string column`);
  const col = table.getChild(key);
  if (col && col.nullCount > 0) throw new Error(`${where}: key column ${key} has ${col.nullCount} null(s)`);
}

/** The schema of `withSeqColumn(table, …)`: the key non-nullable, then `_seq` Int64 last. */
export function withSeqSchema(schema: Schema, key: string): Schema {
  const kept = schema.fields.filter((f) => f.name !== SEQ_COLUMN);
  return new arrow.Schema([
    ...kept.map((f) => (f.name === key ? new arrow.Field(f.name, f.type, false, f.metadata) : f)),
    new arrow.Field(SEQ_COLUMN, new arrow.Int64(), false),
  ]);
}

const scratchInt64 = (b: Buffer, n: number): BigInt64Array => new BigInt64Array(b.buffer, b.byteOffset, n);

/** `n` copies of the Int64 `seq`, written as 32-bit halves (BigInt64Array.fill is ~30x slower). */
function int64Repeated(seq: number, n: number, alloc?: Alloc): BigInt64Array {
  const out = alloc ? scratchInt64(alloc(8 * n), n) : new BigInt64Array(n);
  // Native fill: no JavaScript loop to warm up (a writer's first seals run it cold).
  return out.fill(BigInt(seq));
}

/**
 * The same table with `_seq` = seq on every row (replacing any `_seq` the writer sent)
 * and the key field marked non-nullable.
 */
export function withSeqColumn(table: ArrowTable, seq: number, key: string, alloc?: Alloc): ArrowTable {
  const schema = withSeqSchema(table.schema, key);
  const struct = new arrow.Struct(schema.fields);
  const kept = schema.fields.slice(0, -1);
  const batches = table.batches.map((batch) => {
    const seqData = arrow.makeData({ type: new arrow.Int64(), length: batch.numRows, nullCount: 0, data: int64Repeated(seq, batch.numRows, alloc) });
    const children = [...kept.map((f) => batch.getChild(f.name)!.data[0]!), seqData];
    const data = arrow.makeData({ type: struct, length: batch.numRows, nullCount: 0, children });
    return new arrow.RecordBatch(schema, data);
  });
  return new arrow.Table(schema, batches);
}
