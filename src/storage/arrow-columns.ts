import { arrow, type ArrowTable, type DataType, type Field, type Vector } from './arrow';

// Building Arrow tables column by column, for the writer's casts and per-shard splits.
// arrow-js has no take/filter/cast kernels, so columns are rebuilt through its
// builders (vectorFromArray) from plain values.

/** A cell as a builder accepts it: nested list cells come back from `get` as Vectors. */
function plain(value: unknown): unknown {
  return value instanceof arrow.Vector ? Array.from(value as Iterable<unknown>, plain) : value;
}

/** The cells of `column` at `rows` (all rows when absent), mapped through `convert`. */
export function cells(column: Vector, rows?: readonly number[], convert: (v: unknown) => unknown = (v) => v): unknown[] {
  const out: unknown[] = new Array(rows ? rows.length : column.length);
  for (let i = 0; i < out.length; i++) {
    const v = plain(column.get(rows ? (rows[i] as number) : i));
    out[i] = v === null || v === undefined ? null : convert(v);
  }
  return out;
}

export const vectorOf = (values: unknown[], type: DataType): Vector => arrow.vectorFromArray(values, type) as Vector;

/** A table of these fields (names, types, nullability, metadata kept) over these columns. */
export function tableOf(fields: readonly Field[], columns: readonly Vector[]): ArrowTable {
  const length = columns[0]?.length ?? 0;
  const schema = new arrow.Schema([...fields]);
  // Builders give one chunk; a column of several is rebuilt into one to be a child.
  const children = columns.map((c) => (c.data.length === 1 ? c.data[0]! : vectorOf(cells(c), c.type).data[0]!));
  const batch = new arrow.RecordBatch(schema, arrow.makeData({ type: new arrow.Struct(schema.fields), length, nullCount: 0, children }));
  return new arrow.Table(schema, [batch]);
}

/** The rows at `rows` of `table`, same schema. */
export function takeRows(table: ArrowTable, rows: readonly number[]): ArrowTable {
  return tableOf(
    table.schema.fields,
    table.schema.fields.map((f) => vectorOf(cells(table.getChild(f.name)!, rows), f.type)),
  );
}
