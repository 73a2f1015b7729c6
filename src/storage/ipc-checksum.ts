import { createHash, randomBytes } from 'node:crypto';
import type * as ArrowNs from 'apache-arrow';
import { YIELD_EVERY_BYTES, yieldToEventLoop } from '../util/event-loop';
import { fastHashReady, xxh64Hex, xxh64Stream } from './fast-hash';
import { joinInto } from './scratch';
import { finishedBytes, type PatchedBytes } from './storage';

// Arrow IPC has no checksum of its own: a flipped bit inside a column decodes as a
// different value. So every IPC file written here carries a digest of its own bytes
// in its schema metadata (one file per write instead of a file plus a sidecar: a seal
// is then one durable write, and a seq can be claimed by creating the file itself).
// Written: xxh64 (`turnstile.xxh64`, fast-hash.ts). Read: that, or the sha256
// (`turnstile.sha256`) of files written before; a version that only knows sha256 refuses
// an xxh64 file as having no checksum, so workers are upgraded before writers.
//
// A digest cannot be computed over bytes that contain it, so it is computed over the
// file with every copy of the digest (the footer's schema; the stream header's too if
// the writer puts metadata there) replaced by '0's. To find those copies without
// parsing flatbuffers, the file is first encoded with a random hex placeholder: no
// column value can contain a string nobody could predict, so its occurrences are
// exactly the metadata's. The same holds for the digest when verifying: data written
// before its digest existed cannot contain it.

interface Algorithm {
  key: string;
  /** Hex characters of a digest. */
  chars: number;
  digest: (bytes: Uint8Array) => string;
  stream: () => { update: (bytes: Uint8Array) => void; digestHex: () => string };
}

const sha256Stream = () => {
  const h = createHash('sha256');
  return { update: (b: Uint8Array) => void h.update(b), digestHex: () => h.digest('hex') };
};

export const CHECKSUMS = {
  xxh64: { key: 'turnstile.xxh64', chars: 16, digest: xxh64Hex, stream: xxh64Stream },
  sha256: { key: 'turnstile.sha256', chars: 64, digest: (b) => createHash('sha256').update(b).digest('hex'), stream: sha256Stream },
} satisfies Record<string, Algorithm>;
export type ChecksumName = keyof typeof CHECKSUMS;

/** The metadata key of the checksum written now. */
export const CHECKSUM_KEY = CHECKSUMS.xxh64.key;

// Drawn once per process: the placeholder is overwritten before any byte leaves memory,
// so no file ever shows it and it stays as unpredictable as one drawn per file.
const PLACEHOLDER = randomBytes(32).toString('hex');
const zerosOf = (chars: number): Buffer => Buffer.alloc(chars, '0');

/**
 * Positions of `needle` inside the schema copies of `buf` (stream header and footer):
 * metadata lives nowhere else, and scanning megabytes of column data for it cost more
 * than the digest itself (measured).
 */
function occurrences(buf: Buffer, needle: string): number[] {
  const out: number[] = [];
  for (const [start, end] of schemaRegions(buf)) {
    const region = buf.subarray(start, end);
    for (let at = region.indexOf(needle, 0, 'latin1'); at >= 0; at = region.indexOf(needle, at + needle.length, 'latin1')) out.push(start + at);
  }
  return out;
}

/** The digest of `buf` with the given digest-sized spans zeroed; `buf` is left as it was. */
function digestWithout(algo: Algorithm, buf: Buffer, at: readonly number[]): string {
  const saved = at.map((p) => Buffer.from(buf.subarray(p, p + algo.chars)));
  const zeros = zerosOf(algo.chars);
  for (const p of at) zeros.copy(buf, p);
  const digest = algo.digest(buf);
  at.forEach((p, i) => saved[i]!.copy(buf, p));
  return digest;
}

/**
 * Encodes `table` as an Arrow IPC file whose schema metadata holds the file's own
 * sha256. Joins the writer's chunks into one buffer from `alloc` (scratch.ts lends reused
 * memory): Arrow's own join (tableToIPC) cost ~7 ms per 4 MiB against ~1 ms, and one
 * contiguous write was twice as fast as a writev of the chunks (measured).
 */
export async function encodeChecksummed(arrow: typeof ArrowNs, table: ArrowNs.Table, alloc: (bytes: number) => Buffer = Buffer.allocUnsafe): Promise<Buffer> {
  return (await finishedBytes(await encodeChecksumPending(arrow, table, alloc))) as Buffer;
}

/**
 * As encodeChecksummed, with the digest left to `finish()`: `bytes` holds the file with
 * every copy of the digest zeroed, which is exactly what the digest is computed over, so
 * a file store can write them while the digest runs and then write it into place
 * (storage.ts PatchedBytes). `algorithm` other than the default: tests of older files.
 */
export async function encodeChecksumPending(
  arrow: typeof ArrowNs,
  table: ArrowNs.Table,
  alloc: (bytes: number) => Buffer = Buffer.allocUnsafe,
  algorithm: ChecksumName = 'xxh64',
): Promise<PatchedBytes> {
  await fastHashReady;
  const schema = schemaWithPlaceholder(arrow, table.schema, algorithm);
  const tagged = new arrow.Table(schema, table.batches.map((b) => new arrow.RecordBatch(schema, b.data)));
  const chunks: Uint8Array[] = [];
  for await (const c of arrow.RecordBatchFileWriter.writeAll(tagged)) chunks.push(c);
  return checksumPending(await joinInto(chunks, alloc), algorithm);
}

/** `schema` with the checksum's placeholder in its metadata: what an IPC file written here carries until its digest is known. */
export function schemaWithPlaceholder(arrow: typeof ArrowNs, schema: ArrowNs.Schema, algorithm: ChecksumName = 'xxh64'): ArrowNs.Schema {
  const algo: Algorithm = CHECKSUMS[algorithm];
  const metadata = new Map(schema.metadata);
  for (const a of Object.values(CHECKSUMS)) metadata.delete(a.key);
  metadata.set(algo.key, PLACEHOLDER.slice(0, algo.chars));
  return new arrow.Schema(schema.fields, metadata);
}

/**
 * IPC file bytes encoded with schemaWithPlaceholder's schema, as PatchedBytes: the
 * placeholder's copies are zeroed now and the digest is left to `finish()`. Call after
 * `fastHashReady`.
 */
export function checksumPending(bytes: Buffer, algorithm: ChecksumName = 'xxh64'): PatchedBytes {
  const algo: Algorithm = CHECKSUMS[algorithm];
  const at = occurrences(bytes, PLACEHOLDER.slice(0, algo.chars));
  if (at.length === 0) throw new Error('encodeChecksummed: the checksum metadata is not in a schema message or the footer');
  const zeros = zerosOf(algo.chars);
  for (const p of at) zeros.copy(bytes, p);
  return {
    bytes,
    finish: async () => {
      const hash = algo.stream();
      for (let from = 0; from < bytes.byteLength; from += YIELD_EVERY_BYTES) {
        if (from > 0) await yieldToEventLoop();
        hash.update(bytes.subarray(from, from + YIELD_EVERY_BYTES));
      }
      const digest = Buffer.from(hash.digestHex(), 'latin1');
      return at.map((p) => ({ at: p, bytes: digest }));
    },
  };
}

/** The schema copies of an IPC file as [start, end) offsets: the stream's first message and the footer (bounds checked). */
function schemaRegions(buf: Buffer): [number, number][] {
  const out: [number, number][] = [];
  // File layout: "ARROW1\0\0", then messages (0xFFFFFFFF, int32 length, flatbuffer...),
  // ..., footer flatbuffer, int32 footer length, "ARROW1".
  if (buf.byteLength >= 16 && buf.readUInt32LE(8) === 0xffffffff) {
    const len = buf.readInt32LE(12);
    if (len > 0) out.push([16, Math.min(buf.byteLength, 16 + len)]);
  }
  if (buf.byteLength >= 18) {
    const len = buf.readInt32LE(buf.byteLength - 10);
    if (len > 0 && len <= buf.byteLength - 18) out.push([buf.byteLength - 10 - len, buf.byteLength - 10]);
  }
  return out;
}

const isHex = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66);

/** Every run of exactly `chars` lowercase hex characters in `region`. */
function digestCandidates(region: Buffer, chars: number): string[] {
  const out: string[] = [];
  let run = 0;
  for (let i = 0; i <= region.byteLength; i++) {
    if (i < region.byteLength && isHex(region[i]!)) {
      run++;
      continue;
    }
    if (run === chars) out.push(region.toString('latin1', i - chars, i));
    run = 0;
  }
  return out;
}

/**
 * Verifies a file's bytes against the digest its schema metadata holds, before any
 * decoding (a damaged length field can send Arrow's decoder into a loop of seconds or
 * worse): null when they match, a reason when not, `undefined` when the file holds no
 * embedded checksum (a file written before this scheme, a user's file, or one whose
 * checksum key itself was damaged: see readIpcFile's `checksum: 'required'`).
 */
export function embeddedChecksumProblem(buf: Buffer): string | null | undefined {
  const regions = schemaRegions(buf).map(([start, end]) => buf.subarray(start, end));
  const algo: Algorithm | undefined = Object.values(CHECKSUMS).find((a) => regions.some((r) => r.includes(a.key, 0, 'latin1')));
  if (!algo) return undefined;
  for (const digest of new Set(regions.flatMap((r) => digestCandidates(r, algo.chars)))) {
    const at = occurrences(buf, digest);
    if (digestWithout(algo, buf, at) === digest) return null;
  }
  return `checksum differs from the one recorded when it was written (${algo.key}): the content changed`;
}

/** The same table without the checksum key, so what was written is what is read back. */
export function withoutChecksum(arrow: typeof ArrowNs, table: ArrowNs.Table): ArrowNs.Table {
  const keys = Object.values(CHECKSUMS).map((a) => a.key);
  if (!keys.some((k) => table.schema.metadata.has(k))) return table;
  const metadata = new Map(table.schema.metadata);
  for (const k of keys) metadata.delete(k);
  const schema = new arrow.Schema(table.schema.fields, metadata);
  return new arrow.Table(schema, table.batches.map((b) => new arrow.RecordBatch(schema, b.data)));
}
