import { createRequire } from 'node:module';
import { createHash } from 'node:crypto';
import path from 'node:path';
import type * as ArrowNs from 'apache-arrow';
import { basenameLoc } from './location';
import { storageOf } from './open-storage';
import { notFound, type PatchedBytes, type Storage } from './storage';
import { withScratch, type Alloc } from './scratch';
import { fastHashReady } from './fast-hash';
import { CHECKSUM_KEY, embeddedChecksumProblem, encodeChecksummed, encodeChecksumPending, withoutChecksum } from './ipc-checksum';

// The file helpers live in atomic-file.ts (which needs no Arrow, so modules that only
// write JSON do not load apache-arrow); re-exported for the modules that use both.
export { fsyncDir, tempPathFor, writeFileAtomic } from './atomic-file';

// lancedb loads apache-arrow with CommonJS `require`. An ESM `import` of the same
// package (what vitest and tsx do for node_modules) yields a SECOND Arrow instance,
// and lancedb then fails with "Table and inner RecordBatch schemas must be
// equivalent". So every module of the project gets Arrow from here, through require.
// `__filename` exists under tsx, vitest and the compiled CLI (dist/cli.js is CommonJS,
// and resolves the same node_modules); the cwd fallback only matters for a future
// pure-ESM build.
const requireHere = createRequire(typeof __filename === 'string' ? __filename : path.join(process.cwd(), 'index.js'));

export const arrow: typeof ArrowNs = requireHere('apache-arrow') as typeof ArrowNs;

/** A module of apache-arrow beyond its public API, from the same instance (ipc-layout.ts). */
export const requireArrowModule = (name: string): unknown => requireHere(`apache-arrow/${name}`);
export type ArrowTable = ArrowNs.Table;
export type RecordBatch = ArrowNs.RecordBatch;
export type Schema = ArrowNs.Schema;
export type Field = ArrowNs.Field;
export type DataType = ArrowNs.DataType;
export type Vector = ArrowNs.Vector;

const MAGIC = Buffer.from('ARROW1');

/** Raised when an IPC file cannot be decoded; the message names the file. */
export class CorruptArrowFileError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`${file}: not a readable Arrow IPC file (${reason})`);
    this.name = 'CorruptArrowFileError';
  }
}

export function toTable(data: ArrowTable | RecordBatch): ArrowTable {
  return data instanceof arrow.RecordBatch ? new arrow.Table([data]) : data;
}

// Checksums live inside each file's schema metadata (ipc-checksum.ts). Files written
// before that have a sidecar `<file>.sha256` (digest and length of the whole file),
// still verified when present; gc removes it with its file.

export const checksumFile = (file: string): string => `${file}.sha256`;
const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** Encode a table or batch as a checksummed Arrow IPC file (file format, with footer). */
export const encodeIpcFile = (data: ArrowTable | RecordBatch, alloc?: Alloc): Promise<Buffer> => encodeChecksummed(arrow, toTable(data), alloc);

/** As encodeIpcFile, with the checksum computed by whoever writes the bytes (storage.ts PatchedBytes). */
export const encodeIpcFilePending = (data: ArrowTable | RecordBatch, alloc?: Alloc): Promise<PatchedBytes> => encodeChecksumPending(arrow, toTable(data), alloc);

/** Write a table or batch as an Arrow IPC file (or object) atomically and (unless `durable: false`, see writeFileAtomic) durably, checksummed. */
export async function writeIpcFileAtomic(file: string, data: ArrowTable | RecordBatch, opts: { durable?: boolean } = {}): Promise<{ bytes: number }> {
  return withScratch(async (alloc) => {
    const bytes = await encodeIpcFile(data, alloc);
    await storageOf(file).put(file, bytes, opts);
    return { bytes: bytes.byteLength };
  });
}

/** Problem with the file's bytes against its legacy sidecar, or null; undefined when there is none. */
async function sidecarProblem(file: string, buf: Uint8Array, storage: Storage): Promise<string | null | undefined> {
  const sidecar = await storage.read(checksumFile(file));
  if (sidecar === null) return undefined;
  const text = sidecar.toString('utf8');
  const m = /^([0-9a-f]{64}) (\d+)\s*$/.exec(text);
  if (!m) return `checksum file ${checksumFile(file)} is unreadable`;
  if (Number(m[2]) !== buf.byteLength) return `${buf.byteLength} bytes where ${m[2]} were written: truncated or extended`;
  if (sha256(buf) !== m[1]) return 'sha256 differs from the one recorded when it was written: the content changed';
  return null;
}

export interface ReadIpcOptions {
  /**
   * 'required' (the default: files Turnstile wrote) refuses a file with neither an
   * embedded checksum nor a sidecar, since damage to the checksum's own metadata key
   * would otherwise pass as "no checksum"; 'optional' is for files users hand in.
   */
  checksum?: 'required' | 'optional';
  /** Read into memory from this allocator (scratch.ts): the table is then valid only while that memory is lent. */
  alloc?: Alloc;
  /** The backend the caller already holds for the file (default: the one serving its location). */
  storage?: Storage;
}

/**
 * Read an Arrow IPC file. The file format has the magic at both ends, so a truncated
 * file is caught before decoding; decoding errors are rethrown naming the file.
 * ENOENT is passed through unchanged so callers can tell "missing" from "corrupt".
 */
export async function readIpcFile(file: string, opts: ReadIpcOptions = {}): Promise<ArrowTable> {
  return (await readIpcFileBytes(file, opts)).table;
}

/** What is wrong with the bytes' shape as an IPC file (size, magic at both ends), or null. */
export function ipcShapeProblem(buf: Buffer): string | null {
  // Smallest valid file: magic + padding (8) + footer length (4) + magic (6).
  if (buf.byteLength < 18) return `only ${buf.byteLength} bytes`;
  if (!buf.subarray(0, 6).equals(MAGIC)) return 'no leading ARROW1 magic';
  if (!buf.subarray(buf.byteLength - 6).equals(MAGIC)) return 'no trailing ARROW1 magic: truncated';
  return null;
}

/** Decodes bytes whose checksum was verified: the table without its checksum key, or why it cannot be read. */
export function decodeVerifiedIpc(buf: Buffer): { table: ArrowTable } | { problem: string } {
  let table: ArrowTable;
  try {
    table = arrow.tableFromIPC(buf);
  } catch (err) {
    return { problem: err instanceof Error ? err.message : String(err) };
  }
  table = withoutChecksum(arrow, table);
  if (table.schema.fields.length === 0) return { problem: 'no columns' };
  return { table };
}

/** The checksum problem of a file's bytes (embedded, else its legacy sidecar), or null; `required` refuses a file with neither. */
export async function checksumProblem(file: string, buf: Buffer, required: boolean, storage: Storage = storageOf(file)): Promise<string | null> {
  await fastHashReady;
  let changed = embeddedChecksumProblem(buf);
  if (changed === undefined) changed = await sidecarProblem(file, buf, storage);
  if (changed === undefined && required) changed = `no checksum (${CHECKSUM_KEY} metadata or ${basenameLoc(checksumFile(file))}): damaged, or not written by Turnstile`;
  return changed ?? null;
}

/** readIpcFile, also returning the file's bytes (the table's columns are views into them). */
export async function readIpcFileBytes(file: string, opts: ReadIpcOptions = {}): Promise<{ table: ArrowTable; bytes: Buffer }> {
  const storage = opts.storage ?? storageOf(file);
  const buf = await storage.read(file, opts.alloc);
  if (buf === null) throw notFound(file);
  const shape = ipcShapeProblem(buf);
  if (shape) throw new CorruptArrowFileError(file, shape);
  // Checked before decoding: Arrow's decoder can spin for seconds on a damaged length.
  const changed = await checksumProblem(file, buf, opts.checksum !== 'optional', storage);
  if (changed) throw new CorruptArrowFileError(file, changed);
  const decoded = decodeVerifiedIpc(buf);
  if ('problem' in decoded) throw new CorruptArrowFileError(file, decoded.problem);
  return { table: decoded.table, bytes: buf };
}

/** The table of IPC file bytes this process encoded itself (no checks: they never left memory). */
export const decodeOwnIpcFile = (bytes: Uint8Array): ArrowTable => withoutChecksum(arrow, arrow.tableFromIPC(bytes));
