import { arrow, type Field, type Vector } from '../src/storage/arrow';

// Taking the winning rows of one source of a merge into new columns. Arrow JS has no
// `take`, and its builders (vectorFromArray) cost ~1.5 us per value, most of a
// prepareMerge. So the common columns are copied buffer to buffer: fixed-width numbers
// without nulls through typed arrays, strings without nulls through offsets and raw
// UTF-8 bytes. Anything else (nulls, nested types) goes through the builders.

type Data = Vector['data'][number];

/** Rows of one column, possibly in several chunks (record batches). */
class Chunks {
  private readonly starts: number[] = [];
  readonly data: readonly Data[];

  constructor(vec: Vector) {
    this.data = vec.data;
    let at = 0;
    for (const d of this.data) {
      this.starts.push(at);
      at += d.length;
    }
  }

  /** [chunk, row within chunk] for a row of the whole column. */
  locate(row: number): [Data, number] {
    if (this.data.length === 1) return [this.data[0] as Data, row];
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.starts[mid] as number) <= row) lo = mid;
      else hi = mid - 1;
    }
    return [this.data[lo] as Data, row - (this.starts[lo] as number)];
  }
}

function takeFixed(field: Field, column: Vector, rows: ArrayLike<number>): Vector {
  const from = column.toArray() as ArrayLike<number | bigint> & ArrayBufferView;
  const ArrayType = field.type.ArrayType as new (n: number) => { [i: number]: number | bigint } & ArrayBufferView;
  const out = new ArrayType(rows.length);
  if ((field.type as { bitWidth?: number }).bitWidth === 64 && arrow.DataType.isInt(field.type)) {
    // As Int32 halves: reading a BigInt64Array element allocates a BigInt per row.
    const ins = new Int32Array(from.buffer, from.byteOffset, from.byteLength >> 2);
    const o = new Int32Array(out.buffer, out.byteOffset, rows.length * 2);
    for (let j = 0; j < rows.length; j++) {
      const r = 2 * (rows[j] as number);
      o[2 * j] = ins[r] as number;
      o[2 * j + 1] = ins[r + 1] as number;
    }
  } else {
    for (let j = 0; j < rows.length; j++) out[j] = from[rows[j] as number] as number | bigint;
  }
  return arrow.makeVector(arrow.makeData({ type: field.type, length: rows.length, nullCount: 0, data: out as never }));
}

function takeUtf8(field: Field, column: Vector, rows: ArrayLike<number>): Vector | null {
  // Usually one chunk (a file read back): then its buffers are indexed directly.
  const chunks = column.data.length === 1 ? null : new Chunks(column);
  let vo = column.data[0]!.valueOffsets as Int32Array;
  let val = column.data[0]!.values as Uint8Array;
  // Sets vo/val to the row's chunk and returns the row within it.
  const at = (row: number): number => {
    if (!chunks) return row;
    // Sliced Data has its offsets buffer sliced too: index it by the local row.
    const [d, r] = chunks.locate(row);
    vo = d.valueOffsets as Int32Array;
    val = d.values as Uint8Array;
    return r;
  };
  const offsets = new Int32Array(rows.length + 1);
  let total = 0;
  for (let j = 0; j < rows.length; j++) {
    const r = at(rows[j] as number);
    total += (vo[r + 1] as number) - (vo[r] as number);
    if (total > 0x7fffffff) return null;
    offsets[j + 1] = total;
  }
  const bytes = new Uint8Array(total);
  for (let j = 0; j < rows.length; j++) {
    const r = at(rows[j] as number);
    const start = vo[r] as number;
    const end = vo[r + 1] as number;
    let o = offsets[j] as number;
    // Short values byte by byte: a subarray per row costs more than copying it.
    if (end - start > 32) bytes.set(val.subarray(start, end), o);
    else for (let b = start; b < end; b++) bytes[o++] = val[b] as number;
  }
  return arrow.makeVector(arrow.makeData({ type: field.type as InstanceType<typeof arrow.Utf8>, length: rows.length, nullCount: 0, valueOffsets: offsets, data: bytes }));
}

function takeGeneric(field: Field, column: Vector, rows: ArrayLike<number>): Vector {
  const values = new Array<unknown>(rows.length);
  for (let j = 0; j < rows.length; j++) {
    const v: unknown = column.get(rows[j] as number);
    // Nested values (lists, fixed-size lists) come back as Vectors; builders want arrays.
    values[j] = v instanceof arrow.Vector ? Array.from(v.toArray() as ArrayLike<unknown>) : v;
  }
  return arrow.vectorFromArray(values, field.type) as Vector;
}

/** A new column holding, in order, the given rows of `column`. */
export function takeRows(field: Field, column: Vector, rows: ArrayLike<number>): Vector {
  const t = field.type;
  if (column.nullCount === 0 && (arrow.DataType.isInt(t) || arrow.DataType.isFloat(t))) return takeFixed(field, column, rows);
  if (column.nullCount === 0 && arrow.DataType.isUtf8(t)) {
    const v = takeUtf8(field, column, rows);
    if (v) return v;
  }
  return takeGeneric(field, column, rows);
}
