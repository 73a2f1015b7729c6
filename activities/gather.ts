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
  const arrays = columns.map((c) => c.toArray() as ArrayLike<number | bigint>);
  const ArrayType = field.type.ArrayType as new (n: number) => { [i: number]: number | bigint };
  const out = new ArrayType(picks.length);
  for (let j = 0; j < picks.length; j++) {
    const p = picks[j] as number;
    const s = Math.floor(p / SHIFT);
    out[j] = (arrays[s] as ArrayLike<number | bigint>)[p - s * SHIFT] as number | bigint;
  }
  return arrow.makeVector(arrow.makeData({ type: field.type, length: picks.length, nullCount: 0, data: out as never }));
}

function gatherUtf8(field: Field, columns: Vector[], picks: ArrayLike<number>): Vector | null {
  const chunks = columns.map((c) => new Chunks(c));
  const at = (p: number): [Data, number] => {
    const s = Math.floor(p / SHIFT);
    // Sliced Data has its offsets buffer sliced too: index it by the local row.
    return (chunks[s] as Chunks).locate(p - s * SHIFT);
  };
  const offsets = new Int32Array(picks.length + 1);
  let total = 0;
  for (let j = 0; j < picks.length; j++) {
    const [d, r] = at(picks[j] as number);
    const vo = d.valueOffsets as Int32Array;
    total += (vo[r + 1] as number) - (vo[r] as number);
    if (total > 0x7fffffff) return null;
    offsets[j + 1] = total;
  }
  const bytes = new Uint8Array(total);
  for (let j = 0; j < picks.length; j++) {
    const [d, r] = at(picks[j] as number);
    const vo = d.valueOffsets as Int32Array;
    bytes.set((d.values as Uint8Array).subarray(vo[r] as number, vo[r + 1] as number), offsets[j] as number);
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
