import { createRequire } from 'node:module';
import path from 'node:path';
import { arrow, type ArrowTable } from './arrow';
import { joinInto, type Alloc } from './scratch';

// A merge's rows reach Lance as Arrow IPC bytes: lancedb encodes the table
// (RecordBatchFileWriter), joins the chunks into a new array, and copies that once more
// (Buffer.from), all in fresh memory; in a worker's profile that was ~260 ms of the main
// thread per 1M rows merged, mostly first-touch page faults. Here the table is encoded
// once into reused scratch memory and handed over as is: lancedb's own
// `fromDataToBuffer` (which MergeInsertBuilder.execute calls through its module's
// exports) passes an EncodedIpc through unchanged. lancedb is pinned (0.31.0); if a
// version stops calling through that export, execute() rejects an EncodedIpc as data,
// so every merge test fails loudly rather than merging anything wrong.

/** Arrow IPC file bytes for lancedb's native side, valid while the lender's scratch is. */
export class EncodedIpc {
  constructor(
    readonly bytes: Buffer,
    readonly numRows: number,
  ) {}
}

type ToBuffer = (data: unknown, embeddings?: unknown, schema?: unknown) => Promise<Buffer>;
let installed = false;

/** Makes lancedb accept an EncodedIpc wherever it takes data for a merge (idempotent). */
export function acceptEncodedIpc(): void {
  if (installed) return;
  const require = createRequire(typeof __filename === 'string' ? __filename : path.join(process.cwd(), 'index.js'));
  const mod = require(path.join(path.dirname(require.resolve('@lancedb/lancedb')), 'arrow.js')) as { fromDataToBuffer: ToBuffer };
  const original = mod.fromDataToBuffer;
  if (typeof original !== 'function') throw new Error('lancedb: fromDataToBuffer not found; the pinned @lancedb/lancedb version changed');
  mod.fromDataToBuffer = (data, embeddings, schema) => (data instanceof EncodedIpc ? Promise.resolve(data.bytes) : original(data, embeddings, schema));
  installed = true;
}

/** `table` as one Arrow IPC file in memory from `alloc`. */
export async function encodeForLance(table: ArrowTable, alloc: Alloc): Promise<EncodedIpc> {
  const chunks: Uint8Array[] = [];
  for await (const c of arrow.RecordBatchFileWriter.writeAll(table)) chunks.push(c);
  return new EncodedIpc(await joinInto(chunks, alloc), table.numRows);
}
