import type * as ArrowNs from 'apache-arrow';
import { arrow, requireArrowModule } from './arrow';

// An Arrow IPC file laid out before its columns exist, so that a merge's winning rows can
// be gathered straight into the file's body instead of into columns of their own that
// Arrow's writer then copies into the file (activities/encode-winners.ts). The layout is
// the one apache-arrow's RecordBatchFileWriter makes, byte for byte (tested): the magic
// and two bytes of padding; per record batch a message (continuation marker, length,
// flatbuffer, padded to 8) and its body, every buffer padded to 8 with zeros; the
// end-of-stream marker; the footer (the schema and where each batch is), its length and
// the magic. The flatbuffers come from Arrow's own encoders, which are not part of its
// public API: apache-arrow is pinned (package.json) for that reason too.

interface Internals {
  Message: { from(header: unknown, bodyLength: number): unknown; encode(message: unknown): Uint8Array };
  RecordBatch: new (length: number, nodes: unknown[], buffers: unknown[]) => unknown;
  FieldNode: new (length: number, nullCount: number) => unknown;
  BufferRegion: new (offset: number, length: number) => unknown;
  Footer: { encode(footer: unknown): Uint8Array } & (new (schema: ArrowNs.Schema, version: number, recordBatches: unknown[], dictionaryBatches: unknown[]) => unknown);
  FileBlock: new (metaDataLength: number, bodyLength: number, offset: number) => unknown;
  VectorAssembler: { assemble(batch: ArrowNs.RecordBatch): { buffers: ArrayBufferView[]; nodes: { length: number; nullCount: number }[] } };
}

let internals: Internals | undefined;
function arrowInternals(): Internals {
  if (!internals) {
    const message = requireArrowModule('ipc/metadata/message') as Record<string, unknown>;
    const file = requireArrowModule('ipc/metadata/file') as Record<string, unknown>;
    const assembler = requireArrowModule('visitor/vectorassembler') as Record<string, unknown>;
    internals = { ...message, ...file, ...assembler } as unknown as Internals;
  }
  return internals;
}

/** One record batch of the file: its rows, and per field its length and nulls and the byte length of each buffer, in the order Arrow writes them. */
export interface BatchPlan {
  rows: number;
  nodes: { length: number; nullCount: number }[];
  /** Unpadded byte lengths: a field's validity bitmap (0 without nulls), then its offsets and values as its type has them. */
  lengths: number[];
}

/** Where one buffer of a batch's body lies in the file. */
export interface Region {
  at: number;
  length: number;
}

export interface IpcLayout {
  /** The file's size in bytes. */
  size: number;
  /** Per batch, per buffer: where its bytes go (the caller puts them there). */
  regions: Region[][];
  /** Writes everything but the buffers' own bytes (their padding included) into `file`, `size` bytes. */
  writeFrame(file: Uint8Array): void;
}

const pad8 = (n: number): number => (n + 7) & ~7;
const MAGIC = Buffer.from('ARROW1');

/** The layout of an IPC file of `schema` holding the planned batches. */
export function layoutIpcFile(schema: ArrowNs.Schema, plans: readonly BatchPlan[]): IpcLayout {
  const A = arrowInternals();
  const pieces: { at: number; bytes: Uint8Array }[] = [{ at: 0, bytes: MAGIC }];
  const pads: Region[] = [];
  const regions: Region[][] = [];
  const blocks: unknown[] = [];
  let at = 8;
  for (const plan of plans) {
    let bodyLength = 0;
    const bufferRegions = plan.lengths.map((n) => {
      const r = new A.BufferRegion(bodyLength, pad8(n));
      bodyLength += pad8(n);
      return r;
    });
    const nodes = plan.nodes.map((n) => new A.FieldNode(n.length, n.nullCount));
    const flat = A.Message.encode(A.Message.from(new A.RecordBatch(plan.rows, nodes, bufferRegions), bodyLength));
    const metaLength = pad8(flat.byteLength + 8);
    blocks.push(new A.FileBlock(metaLength, bodyLength, at));
    const prefix = new Uint8Array(new Int32Array([-1, metaLength - 8]).buffer);
    pieces.push({ at, bytes: prefix }, { at: at + 8, bytes: flat });
    pads.push({ at: at + 8 + flat.byteLength, length: metaLength - 8 - flat.byteLength });
    at += metaLength;
    const own: Region[] = [];
    for (const n of plan.lengths) {
      own.push({ at, length: n });
      pads.push({ at: at + n, length: pad8(n) - n });
      at += pad8(n);
    }
    regions.push(own);
  }
  pieces.push({ at, bytes: new Uint8Array(new Int32Array([-1, 0]).buffer) });
  at += 8;
  const footer = A.Footer.encode(new A.Footer(schema, arrow.MetadataVersion.V5, blocks, []));
  pieces.push({ at, bytes: footer }, { at: at + footer.byteLength, bytes: new Uint8Array(new Int32Array([footer.byteLength]).buffer) });
  at += footer.byteLength + 4;
  pieces.push({ at, bytes: MAGIC });
  const size = at + MAGIC.byteLength;
  return {
    size,
    regions,
    writeFrame(file) {
      if (file.byteLength !== size) throw new Error(`ipc layout: a file of ${size} bytes, not ${file.byteLength}`);
      // Reused memory is not zeroed: the padding Arrow writes as zeros is written here.
      file.fill(0, 6, 8);
      for (const p of pieces) file.set(p.bytes, p.at);
      for (const p of pads) file.fill(0, p.at, p.at + p.length);
    },
  };
}

/** A batch as Arrow's writer would put it in a file: its plan and its buffers (views of its columns' memory). */
export function assembleBatch(batch: ArrowNs.RecordBatch): { plan: BatchPlan; buffers: ArrayBufferView[] } {
  const { buffers, nodes } = arrowInternals().VectorAssembler.assemble(batch);
  return {
    plan: { rows: batch.numRows, nodes: nodes.map((n) => ({ length: n.length, nullCount: n.nullCount })), lengths: buffers.map((b) => b.byteLength) },
    buffers,
  };
}
