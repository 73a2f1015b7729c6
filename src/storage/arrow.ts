import { createRequire } from 'node:module';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type * as ArrowNs from 'apache-arrow';
import { TEMP_MARKER } from './layout';

// lancedb loads apache-arrow with CommonJS `require`. An ESM `import` of the same
// package (what vitest and tsx do for node_modules) yields a SECOND Arrow instance,
// and lancedb then fails with "Table and inner RecordBatch schemas must be
// equivalent". So every module of the project gets Arrow from here, through require.
// `__filename` exists under tsx, vitest and plain CommonJS; the cwd fallback only
// matters for a future pure-ESM build, where it resolves the same node_modules.
const requireHere = createRequire(typeof __filename === 'string' ? __filename : path.join(process.cwd(), 'index.js'));

export const arrow: typeof ArrowNs = requireHere('apache-arrow') as typeof ArrowNs;
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

/** A temp name in the same directory (rename must not cross file systems) that gc can recognise. */
/** A small file's text, or null when it does not exist (any other error is thrown). */
export async function readTextIfExists(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

export function tempPathFor(file: string): string {
  const rand = randomBytes(4).toString('hex');
  return path.join(path.dirname(file), `${TEMP_MARKER}${process.pid}-${rand}-${path.basename(file)}`);
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Write and fsync a new file (the caller renames it into place). */
async function writeDurable(file: string, bytes: Uint8Array | string): Promise<void> {
  const handle = await fs.open(file, 'wx');
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Write several files so that readers see each either not at all or whole, also after
 * a crash: temp files written and fsynced in parallel (one journal commit on ext4
 * instead of one per file), renamed in the given order, then one fsync of each
 * directory (makes the renames durable). Renames follow the list order, so a file
 * listed first is in place before a later one appears.
 */
export async function writeFilesAtomic(files: readonly { file: string; bytes: Uint8Array | string }[]): Promise<void> {
  const temps = files.map((f) => ({ ...f, tmp: tempPathFor(f.file) }));
  try {
    await Promise.all(temps.map((t) => writeDurable(t.tmp, t.bytes)));
    for (const t of temps) await fs.rename(t.tmp, t.file);
  } catch (err) {
    await Promise.all(temps.map((t) => fs.rm(t.tmp, { force: true })));
    throw err;
  }
  for (const dir of new Set(files.map((f) => path.dirname(f.file)))) await fsyncDir(dir);
}

/**
 * Write bytes so that readers see either nothing or the whole file, also after a
 * crash: temp file, fsync, rename, fsync of the directory (makes the rename durable).
 */
export const writeFileAtomic = (file: string, bytes: Uint8Array | string): Promise<void> => writeFilesAtomic([{ file, bytes }]);

// Arrow IPC has no checksum of its own: a flipped bit inside a column decodes as a
// different value. Every IPC file written here gets a sidecar `<file>.sha256` holding
// the digest and length of the whole file, in place (durably) no later than the file itself,
// so a file that exists always has its sidecar. Readers verify when the sidecar exists;
// files from before checksums existed have none and are only structurally checked.

export const checksumFile = (file: string): string => `${file}.sha256`;
const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** Write a table or batch as an Arrow IPC file (file format, with footer) atomically, checksummed. */
export async function writeIpcFileAtomic(file: string, data: ArrowTable | RecordBatch): Promise<{ bytes: number }> {
  const bytes = arrow.tableToIPC(toTable(data), 'file');
  // The sidecar is renamed into place before the file, so a file that exists has one.
  await writeFilesAtomic([
    { file: checksumFile(file), bytes: `${sha256(bytes)} ${bytes.byteLength}\n` },
    { file, bytes },
  ]);
  return { bytes: bytes.byteLength };
}

/** Problem with the file's bytes against its sidecar, or null (also when there is none). */
async function checksumProblem(file: string, buf: Uint8Array): Promise<string | null> {
  let text: string;
  try {
    text = await fs.readFile(checksumFile(file), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const m = /^([0-9a-f]{64}) (\d+)\s*$/.exec(text);
  if (!m) return `checksum file ${checksumFile(file)} is unreadable`;
  if (Number(m[2]) !== buf.byteLength) return `${buf.byteLength} bytes where ${m[2]} were written: truncated or extended`;
  if (sha256(buf) !== m[1]) return 'sha256 differs from the one recorded when it was written: the content changed';
  return null;
}

/**
 * Read an Arrow IPC file. The file format has the magic at both ends, so a truncated
 * file is caught before decoding; decoding errors are rethrown naming the file.
 * ENOENT is passed through unchanged so callers can tell "missing" from "corrupt".
 */
export async function readIpcFile(file: string): Promise<ArrowTable> {
  const buf = await fs.readFile(file);
  // Smallest valid file: magic + padding (8) + footer length (4) + magic (6).
  if (buf.byteLength < 18) throw new CorruptArrowFileError(file, `only ${buf.byteLength} bytes`);
  if (!buf.subarray(0, 6).equals(MAGIC)) throw new CorruptArrowFileError(file, 'no leading ARROW1 magic');
  if (!buf.subarray(buf.byteLength - 6).equals(MAGIC)) {
    throw new CorruptArrowFileError(file, 'no trailing ARROW1 magic: truncated');
  }
  const changed = await checksumProblem(file, buf);
  if (changed) throw new CorruptArrowFileError(file, changed);
  let table: ArrowTable;
  try {
    table = arrow.tableFromIPC(buf);
  } catch (err) {
    throw new CorruptArrowFileError(file, err instanceof Error ? err.message : String(err));
  }
  if (table.schema.fields.length === 0) throw new CorruptArrowFileError(file, 'no columns');
  return table;
}
