import { arrow, type Field, type Vector } from '../src/storage/arrow';
import type { Alloc } from '../src/storage/scratch';

// Taking the winning rows of one source of a merge into new columns. Arrow JS has no
// `take`, and its builders (vectorFromArray) cost ~1.5 us per value, most of a
// prepareMerge. So the common columns are copied buffer to buffer: fixed-width numbers
// without nulls through typed arrays, strings without nulls through offsets and raw
// UTF-8 bytes. Anything else (nulls, nested types) goes through the builders. With an
// `alloc` (scratch.ts) the new columns live in reused memory: fresh memory cost ~1 ms per
// MiB of page faults here, more than the copy itself.

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

/** Rows gathered between two yields: a millisecond or two of copying. */
const SLICE_ROWS = 32_768;

/** A typed array of `length` elements, in memory from `alloc` when given. */
function typed<T>(ArrayType: { new (n: number): T; BYTES_PER_ELEMENT: number }, length: number, alloc: Alloc | undefined): T {
  if (!alloc) return new ArrayType(length);
  const b = alloc(length * ArrayType.BYTES_PER_ELEMENT);
  return new (ArrayType as unknown as new (buffer: ArrayBufferLike, byteOffset: number, length: number) => T)(b.buffer, b.byteOffset, length);
}

function* takeFixed(field: Field, column: Vector, rows: ArrayLike<number>, alloc: Alloc | undefined): Generator<void, Vector> {
  const from = column.toArray() as ArrayLike<number | bigint> & ArrayBufferView;
  const ArrayType = field.type.ArrayType as unknown as { new (n: number): { [i: number]: number | bigint } & ArrayBufferView; BYTES_PER_ELEMENT: number };
  const out = typed(ArrayType, rows.length, alloc);
  const halves = (field.type as { bitWidth?: number }).bitWidth === 64 && arrow.DataType.isInt(field.type);
  for (let from0 = 0; from0 < rows.length; from0 += SLICE_ROWS) {
    if (from0 > 0) yield;
    const to = Math.min(rows.length, from0 + SLICE_ROWS);
    if (halves) gatherInt64(from, out, rows, from0, to);
    else gatherValues(from, out, rows, from0, to);
  }
  return arrow.makeVector(arrow.makeData({ type: field.type, length: rows.length, nullCount: 0, data: out as never }));
}

/** As Int32 halves: reading a BigInt64Array element allocates a BigInt per row. */
function gatherInt64(from: ArrayBufferView, out: ArrayBufferView, rows: ArrayLike<number>, lo: number, hi: number): void {
  const ins = new Int32Array(from.buffer, from.byteOffset, from.byteLength >> 2);
  const o = new Int32Array(out.buffer, out.byteOffset, out.byteLength >> 2);
  for (let j = lo; j < hi; j++) {
    const r = 2 * (rows[j] as number);
    o[2 * j] = ins[r] as number;
    o[2 * j + 1] = ins[r + 1] as number;
  }
}

function gatherValues(from: ArrayLike<number | bigint>, out: { [i: number]: number | bigint }, rows: ArrayLike<number>, lo: number, hi: number): void {
  for (let j = lo; j < hi; j++) out[j] = from[rows[j] as number] as number | bigint;
}

function* takeUtf8(field: Field, column: Vector, rows: ArrayLike<number>, alloc: Alloc | undefined): Generator<void, Vector | null> {
  const src = new Utf8Source(column);
  const offsets = typed(Int32Array, rows.length + 1, alloc);
  offsets[0] = 0; // reused memory is not zeroed
  for (let lo = 0; lo < rows.length; lo += SLICE_ROWS) {
    if (lo > 0) yield;
    if (!src.lengths(rows, offsets, lo, Math.min(rows.length, lo + SLICE_ROWS))) return null;
  }
  const bytes = typed(Uint8Array, offsets[rows.length] as number, alloc);
  for (let lo = 0; lo < rows.length; lo += SLICE_ROWS) {
    yield;
    src.copy(rows, offsets, bytes, lo, Math.min(rows.length, lo + SLICE_ROWS));
  }
  return arrow.makeVector(arrow.makeData({ type: field.type as InstanceType<typeof arrow.Utf8>, length: rows.length, nullCount: 0, valueOffsets: offsets, data: bytes }));
}

/** A string column's offsets and UTF-8 bytes, row by row (plain methods: hot loops optimise better outside generators). */
class Utf8Source {
  // Usually one chunk (a file read back): then its buffers are indexed directly.
  private readonly chunks: Chunks | null;
  private vo: Int32Array;
  private val: Uint8Array;

  constructor(column: Vector) {
    this.chunks = column.data.length === 1 ? null : new Chunks(column);
    this.vo = column.data[0]!.valueOffsets as Int32Array;
    this.val = column.data[0]!.values as Uint8Array;
  }

  /** Sets vo/val to the row's chunk and returns the row within it. */
  private at(row: number): number {
    if (!this.chunks) return row;
    // Sliced Data has its offsets buffer sliced too: index it by the local row.
    const [d, r] = this.chunks.locate(row);
    this.vo = d.valueOffsets as Int32Array;
    this.val = d.values as Uint8Array;
    return r;
  }

  /** Bytes of the rows' values in all; null past 2 GiB (as lengths() fails). */
  total(rows: ArrayLike<number>): number | null {
    let total = 0;
    for (let j = 0; j < rows.length; j++) {
      const r = this.at(rows[j] as number);
      total += (this.vo[r + 1] as number) - (this.vo[r] as number);
    }
    return total > 0x7fffffff ? null : total;
  }

  /** offsets[j + 1] for rows lo..hi-1 (offsets[lo] set); false past 2 GiB of values. */
  lengths(rows: ArrayLike<number>, offsets: Int32Array, lo: number, hi: number): boolean {
    let total = offsets[lo] as number;
    for (let j = lo; j < hi; j++) {
      const r = this.at(rows[j] as number);
      total += (this.vo[r + 1] as number) - (this.vo[r] as number);
      if (total > 0x7fffffff) return false;
      offsets[j + 1] = total;
    }
    return true;
  }

  copy(rows: ArrayLike<number>, offsets: Int32Array, bytes: Uint8Array, lo: number, hi: number): void {
    for (let j = lo; j < hi; j++) {
      const r = this.at(rows[j] as number);
      const start = this.vo[r] as number;
      const end = this.vo[r + 1] as number;
      let o = offsets[j] as number;
      // Short values byte by byte: a subarray per row costs more than copying it.
      if (end - start > 32) bytes.set(this.val.subarray(start, end), o);
      else for (let b = start; b < end; b++) bytes[o++] = this.val[b] as number;
    }
  }
}

function* takeGeneric(field: Field, column: Vector, rows: ArrayLike<number>): Generator<void, Vector> {
  const values = new Array<unknown>(rows.length);
  for (let j = 0; j < rows.length; j++) {
    if (j > 0 && j % SLICE_ROWS === 0) yield;
    const v: unknown = column.get(rows[j] as number);
    // Nested values (lists, fixed-size lists) come back as Vectors; builders want arrays.
    values[j] = v instanceof arrow.Vector ? Array.from(v.toArray() as ArrayLike<unknown>) : v;
  }
  return arrow.vectorFromArray(values, field.type) as Vector;
}

/**
 * A new column holding, in order, the given rows of `column`, yielding every SLICE_ROWS
 * rows: a caller on a worker's event loop lets workflow tasks through between slices
 * (gathering a 300k-row string column took ~15 ms in one piece). With `alloc` the
 * column is only valid as long as that memory is lent.
 */
export function* takeRows(field: Field, column: Vector, rows: ArrayLike<number>, alloc?: Alloc): Generator<void, Vector> {
  const t = field.type;
  if (column.nullCount === 0 && (arrow.DataType.isInt(t) || arrow.DataType.isFloat(t))) return yield* takeFixed(field, column, rows, alloc);
  if (column.nullCount === 0 && arrow.DataType.isUtf8(t)) {
    const v = yield* takeUtf8(field, column, rows, alloc);
    if (v) return v;
  }
  return yield* takeGeneric(field, column, rows);
}

/**
 * The byte length of each buffer an IPC file holds for the column takeRows makes of
 * these rows (a validity bitmap, empty without nulls, then its offsets and values as its
 * type has them), when takeRows gathers it into memory from its `alloc`, one `alloc` per
 * buffer after the bitmap, in that order; null when it would not (nulls, other types).
 */
export function takenLengths(field: Field, column: Vector, rows: ArrayLike<number>): number[] | null {
  const t = field.type;
  if (column.nullCount !== 0) return null;
  if (arrow.DataType.isInt(t) || arrow.DataType.isFloat(t)) return [0, rows.length * (t.ArrayType as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT];
  if (!arrow.DataType.isUtf8(t)) return null;
  const total = new Utf8Source(column).total(rows);
  return total === null ? null : [0, (rows.length + 1) * 4, total];
}
