// Reused memory for the big short-lived buffers of a seal or a prepared batch: the
// encoded file and the `_seq` column. On the machines we measure on, first touching
// fresh memory costs ~20 us per 4 KiB page (a 3.6 MiB buffer: 15-19 ms, against 0.3 ms
// for memory touched before), and a new buffer per file is fresh memory every time:
// it was half of a 100k-row seal. A buffer is lent for the length of one callback and
// must not be kept past it.

import { YIELD_EVERY_BYTES, yieldToEventLoop } from '../util/event-loop';

/** Buffers kept between uses, at most this many bytes per pool: bounds what a writer process holds on to. */
const KEEP_BYTES = 64 * 2 ** 20;

export type Alloc = (bytes: number) => Buffer;

interface Pool {
  free: Buffer[];
  make: (bytes: number) => Buffer;
}

const plain: Pool = { free: [], make: (n) => Buffer.allocUnsafeSlow(n) };
// Memory a dedup thread reads without a copy (activities/dedup-threads.ts).
const shared: Pool = { free: [], make: (n) => Buffer.from(new SharedArrayBuffer(n)) };

/** Calls `fn` with an allocator whose buffers are valid until `fn`'s promise settles. */
export const withScratch = <T>(fn: (alloc: Alloc) => Promise<T>): Promise<T> => lend(plain, fn);

/** withScratch, in memory shared with worker threads (SharedArrayBuffer): lent to them too for the length of `fn`. */
export const withSharedScratch = <T>(fn: (alloc: Alloc) => Promise<T>): Promise<T> => lend(shared, fn);

async function lend<T>(pool: Pool, fn: (alloc: Alloc) => Promise<T>): Promise<T> {
  const lent: Buffer[] = [];
  const alloc: Alloc = (bytes) => {
    const buf = take(pool, bytes);
    lent.push(buf);
    return buf.subarray(0, bytes);
  };
  try {
    return await fn(alloc);
  } finally {
    for (const b of lent) keep(pool, b);
  }
}

/** The smallest kept buffer of at least `bytes`, or a new one. */
function take(pool: Pool, bytes: number): Buffer {
  const at = pool.free.findIndex((b) => b.byteLength >= bytes);
  // Rounded up so that the next, slightly larger file of a stream still fits.
  return at >= 0 ? pool.free.splice(at, 1)[0]! : pool.make(Math.ceil((bytes * 1.25) / 65536) * 65536);
}

// Memory that outlives one callback: a prepared batch's file bytes, kept by the prepared
// cache until the commit on this worker has handed them to Lance (activities/
// prepared-cache.ts, commit-merge.ts). Given back then, the next preparation encodes
// into it instead of into fresh memory: in steady state a 2 x 3 x 200k round spent 152 ms
// of the worker's main thread joining its two batches into fresh memory. A pool of its
// own, since the generations a preparation reads would take these larger buffers first.
const carried: Pool = { free: [], make: (n) => Buffer.allocUnsafeSlow(n) };
/** The carried buffers handed out and not given back: only those may return to the pool, once. */
const carriedOut = new WeakSet<ArrayBufferLike>();

/** A buffer of `bytes` for as long as the caller likes; giveBackCarried returns it. */
export const allocCarried: Alloc = (bytes) => {
  const buf = take(carried, bytes);
  carriedOut.add(buf.buffer);
  return buf.subarray(0, bytes);
};

/**
 * Returns memory from allocCarried to its pool: the caller and everything it lent the
 * memory to are done with it (any other memory is left to the garbage collector).
 */
export function giveBackCarried(bytes: Uint8Array): void {
  if (!carriedOut.delete(bytes.buffer)) return;
  keep(carried, Buffer.from(bytes.buffer, 0, bytes.buffer.byteLength));
}

function keep(pool: Pool, buf: Buffer): void {
  if (buf.byteLength > KEEP_BYTES) return;
  const free = pool.free;
  free.push(buf);
  free.sort((a, b) => a.byteLength - b.byteLength);
  // Over the bound: drop the smallest first, the big ones are the costly ones to fault in.
  let held = free.reduce((n, b) => n + b.byteLength, 0);
  while (held > KEEP_BYTES) held -= free.shift()!.byteLength;
}

/**
 * The most a process keeps between uses, all pools together (scratch, shared scratch,
 * carried): memory outside the budget of a worker's units, part of its baseline once it
 * has merged (docs/operations.md, "Memory: admission by reserved bytes").
 */
export const KEPT_BYTES_MAX = 3 * KEEP_BYTES;

/** Bytes of scratch currently kept for reuse (tests). */
export const scratchKeptBytes = (): number => [...plain.free, ...shared.free].reduce((n, b) => n + b.byteLength, 0);

/**
 * `chunks` (an encoder's output) joined into one buffer from `alloc`, letting other
 * callbacks run every YIELD_EVERY_BYTES copied (a 10 MiB batch took 10-25 ms in one piece).
 */
export async function joinInto(chunks: readonly Uint8Array[], alloc: Alloc): Promise<Buffer> {
  const buf = alloc(chunks.reduce((n, c) => n + c.byteLength, 0));
  let offset = 0;
  let sinceYield = 0;
  for (const c of chunks) {
    if (sinceYield >= YIELD_EVERY_BYTES) {
      sinceYield = 0;
      await yieldToEventLoop();
    }
    buf.set(c, offset);
    offset += c.byteLength;
    sinceYield += c.byteLength;
  }
  return buf;
}
