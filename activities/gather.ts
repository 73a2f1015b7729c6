import { arrow, type Field, type Vector } from '../src/storage/arrow';

// Gathering the winning rows of a merge into new columns. Arrow JS has no `take`, and
// its builders (vectorFromArray) cost ~1.5 us per value, most of a prepareMerge. So
// the common columns are copied buffer to buffer: fixed-width numbers without nulls
// through typed arrays, strings without nulls through offsets and raw UTF-8 bytes.
// Anything else (nulls, nested types) goes through the builders.

export const SHIFT = 2 ** 32;

type Data = Vector['data'][number];

/** Rows of one source column, possibly in several chunks (record batches). */
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

function gatherFixed(field: Field, columns: Vector[], picks: ArrayLike<number>): Vector {
  const arrays = columns.map((c) => c.toArray() as ArrayLike<number | bigint> & ArrayBufferView);
  const ArrayType = field.type.ArrayType as new (n: number) => { [i: number]: number | bigint } & ArrayBufferView;
  const out = new ArrayType(picks.length);
  if ((field.type as { bitWidth?: number }).bitWidth === 64 && arrow.DataType.isInt(field.type)) {
    // As Int32 halves: reading a BigInt64Array element allocates a BigInt per row.
    const ins = arrays.map((a) => new Int32Array(a.buffer, a.byteOffset, a.byteLength >> 2));
    const o = new Int32Array(out.buffer, out.byteOffset, picks.length * 2);
    for (let j = 0; j < picks.length; j++) {
      const p = picks[j] as number;
      const s = Math.floor(p / SHIFT);
      const from = (ins[s] as Int32Array);
      const r = 2 * (p - s * SHIFT);
      o[2 * j] = from[r] as number;
      o[2 * j + 1] = from[r + 1] as number;
    }
  } else {
    for (let j = 0; j < picks.length; j++) {
      const p = picks[j] as number;
      const s = Math.floor(p / SHIFT);
      out[j] = (arrays[s] as ArrayLike<number | bigint>)[p - s * SHIFT] as number | bigint;
    }
  }
  return arrow.makeVector(arrow.makeData({ type: field.type, length: picks.length, nullCount: 0, data: out as never }));
}

function gatherUtf8(field: Field, columns: Vector[], picks: ArrayLike<number>): Vector | null {
  // Sources are usually one chunk each (a file read back): then index their buffers
  // directly instead of locating a chunk per row.
  const single = columns.every((c) => c.data.length === 1);
  const chunks = single ? [] : columns.map((c) => new Chunks(c));
  const vos = single ? columns.map((c) => c.data[0]!.valueOffsets as Int32Array) : [];
  const vals = single ? columns.map((c) => c.data[0]!.values as Uint8Array) : [];
  let vo: Int32Array = new Int32Array(0);
  let val: Uint8Array = new Uint8Array(0);
  // Sets vo/val to the pick's chunk and returns the row within it.
  const at = (p: number): number => {
    const s = Math.floor(p / SHIFT);
    if (single) {
      vo = vos[s] as Int32Array;
      val = vals[s] as Uint8Array;
      return p - s * SHIFT;
    }
    // Sliced Data has its offsets buffer sliced too: index it by the local row.
    const [d, r] = (chunks[s] as Chunks).locate(p - s * SHIFT);
    vo = d.valueOffsets as Int32Array;
    val = d.values as Uint8Array;
    return r;
  };
  const offsets = new Int32Array(picks.length + 1);
  let total = 0;
  for (let j = 0; j < picks.length; j++) {
    const r = at(picks[j] as number);
    total += (vo[r + 1] as number) - (vo[r] as number);
    if (total > 0x7fffffff) return null;
    offsets[j + 1] = total;
  }
  const bytes = new Uint8Array(total);
  for (let j = 0; j < picks.length; j++) {
    const r = at(picks[j] as number);
    const start = vo[r] as number;
    const end = vo[r + 1] as number;
    let o = offsets[j] as number;
    // Short values byte by byte: a subarray per row costs more than copying it.
    if (end - start > 32) bytes.set(val.subarray(start, end), o);
    else for (let b = start; b < end; b++) bytes[o++] = val[b] as number;
  }
  return arrow.makeVector(arrow.makeData({ type: field.type as InstanceType<typeof arrow.Utf8>, length: picks.length, nullCount: 0, valueOffsets: offsets, data: bytes }));
}

function gatherGeneric(field: Field, columns: Vector[], picks: ArrayLike<number>): Vector {
  const values = new Array<unknown>(picks.length);
  for (let j = 0; j < picks.length; j++) {
    const p = picks[j] as number;
    const s = Math.floor(p / SHIFT);
    const v: unknown = (columns[s] as Vector).get(p - s * SHIFT);
    // Nested values (lists, fixed-size lists) come back as Vectors; builders want arrays.
    values[j] = v instanceof arrow.Vector ? Array.from(v.toArray() as ArrayLike<unknown>) : v;
  }
  return arrow.vectorFromArray(values, field.type) as Vector;
}

/** A new column holding, for each pick (source * SHIFT + row), that row of `columns[source]`. */
export function gatherColumn(field: Field, columns: Vector[], picks: ArrayLike<number>): Vector {
  const t = field.type;
  const noNulls = columns.every((c) => c.nullCount === 0);
  if (noNulls && (arrow.DataType.isInt(t) || arrow.DataType.isFloat(t))) return gatherFixed(field, columns, picks);
  if (noNulls && arrow.DataType.isUtf8(t)) {
    const v = gatherUtf8(field, columns, picks);
    if (v) return v;
  }
  return gatherGeneric(field, columns, picks);
}
