import { arrow, type ArrowTable, type DataType, type Schema } from '../src/storage/arrow';
import { checksumPending, schemaWithPlaceholder } from '../src/storage/ipc-checksum';
import { assembleBatch, layoutIpcFile, type BatchPlan, type Region } from '../src/storage/ipc-layout';
import type { Alloc } from '../src/storage/scratch';
import type { PatchedBytes } from '../src/storage/storage';
import { YIELD_EVERY_BYTES } from '../src/util/event-loop';
import { takenLengths, takeRows } from './take-rows';

// A merge's winning rows encoded as a checksummed IPC file, gathered straight into the
// file's body: the file is laid out first (ipc-layout.ts), then each column's winners are
// taken into the place the file has for them. Taking them into columns of their own and
// letting Arrow's writer copy those into the file cost a second copy of the batch, in
// memory of its own. The bytes are those that encoding NewestRowPerKey.build()'s table
// would give (tested).

/** Per source of a merge, in seq order: its table, and the rows that win, ascending (null: all of them). */
export interface WinnerPart {
  source: ArrowTable;
  rows: Float64Array | null;
}

/** Winners to gather: per field, how many buffers the file has for it (its bitmap first). */
type Gather = { source: ArrowTable; rows: Float64Array; buffersPerField: number[] };
type Piece = { plan: BatchPlan } & ({ copy: ArrayBufferView[] } | { gather: Gather });

/**
 * The file, its checksum pending, in memory from `alloc` (8-byte aligned, as scratch.ts
 * and Buffer.allocUnsafe give), yielding between slices of work; null when some column
 * is a dictionary or of a kind takeRows does not gather into given memory (the caller
 * encodes build()'s table instead). Call after `fastHashReady`.
 */
export function* encodeWinners(schema: Schema, parts: readonly WinnerPart[], alloc: Alloc): Generator<void, { pending: PatchedBytes; rows: number } | null> {
  // Dictionaries go in batches of their own, which this layout does not write.
  if (schema.fields.some((f) => hasDictionary(f.type))) return null;
  const tagged = schemaWithPlaceholder(arrow, schema);
  const pieces: Piece[] = [];
  let rows = 0;
  for (const part of parts) {
    if (part.rows === null) {
      for (const b of part.source.batches) {
        const { plan, buffers } = assembleBatch(new arrow.RecordBatch(tagged, b.data));
        pieces.push({ plan, copy: buffers });
        rows += b.numRows;
      }
      continue;
    }
    if (part.rows.length === 0) continue;
    const lengths: number[] = [];
    const buffersPerField: number[] = [];
    for (const field of schema.fields) {
      const l = takenLengths(field, part.source.getChild(field.name)!, part.rows);
      if (!l) return null;
      lengths.push(...l);
      buffersPerField.push(l.length);
    }
    const n = part.rows.length;
    pieces.push({ plan: { rows: n, nodes: schema.fields.map(() => ({ length: n, nullCount: 0 })), lengths }, gather: { source: part.source, rows: part.rows, buffersPerField } });
    rows += n;
    yield;
  }
  const layout = layoutIpcFile(tagged, pieces.map((p) => p.plan));
  const file = alloc(layout.size);
  if (file.byteOffset % 8 !== 0) throw new Error('encodeWinners: the file memory is not 8-byte aligned');
  layout.writeFrame(file);
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i] as Piece;
    const regions = layout.regions[i] as Region[];
    if ('copy' in piece) yield* copyInto(file, piece.copy, regions);
    else yield* gatherInto(file, schema, piece.gather, regions);
  }
  return { pending: checksumPending(file), rows };
}

function hasDictionary(type: DataType): boolean {
  return arrow.DataType.isDictionary(type) || (type.children ?? []).some((c) => hasDictionary(c.type));
}

function* copyInto(file: Buffer, buffers: readonly ArrayBufferView[], regions: readonly Region[]): Generator<void> {
  let sinceYield = 0;
  for (let b = 0; b < buffers.length; b++) {
    const buf = buffers[b] as ArrayBufferView;
    const at = (regions[b] as Region).at;
    for (let from = 0; from < buf.byteLength; from += YIELD_EVERY_BYTES) {
      if (sinceYield >= YIELD_EVERY_BYTES) {
        sinceYield = 0;
        yield;
      }
      const n = Math.min(YIELD_EVERY_BYTES, buf.byteLength - from);
      file.set(new Uint8Array(buf.buffer, buf.byteOffset + from, n), at + from);
      sinceYield += n;
    }
  }
}

/** Each column's winners taken into its regions: takeRows asks for one buffer per region after the field's bitmap. */
function* gatherInto(file: Buffer, schema: Schema, part: Gather, regions: readonly Region[]): Generator<void> {
  let next = 0;
  for (let f = 0; f < schema.fields.length; f++) {
    const field = schema.fields[f]!;
    const column = part.source.getChild(field.name)!;
    // The validity bitmap first: empty, nothing to take.
    const buffers = (part.buffersPerField[f] as number) - 1;
    const mine = regions.slice(next + 1, next + 1 + buffers);
    next += 1 + buffers;
    let handed = 0;
    const placed: Alloc = (bytes) => {
      const r = mine[handed++];
      if (!r || r.length !== bytes) throw new Error(`encodeWinners: column ${field.name} asked for ${bytes} bytes where the file has ${r ? r.length : 'no more'}`);
      return file.subarray(r.at, r.at + bytes);
    };
    yield* takeRows(field, column, part.rows, placed);
    if (handed !== buffers) throw new Error(`encodeWinners: column ${field.name} took ${handed} of its ${buffers} buffers`);
    yield;
  }
}
