import { settleFileCleanups } from './atomic-file';
import type { Storage } from './storage';

// SEALED.json is a hint (see generation-store.ts): it bounds the probe for the
// sealed-through seq and makes a generation file lost below it show up as missing. A
// seal does not wait for it: it is written in the background, one write in flight per
// file, coalesced to the highest seq offered, renamed so readers never see it torn and
// not fsynced (a stale hint only costs a few stats). Losing the last hints of a
// process that exits is harmless for the same reason; `settleSealedHints` lets a CLI or
// a test wait for them.

interface Pending {
  store: Storage;
  seq: number;
  written: number;
  running: Promise<void> | null;
}

const pending = new Map<string, Pending>();

// On a filesystem the hint is replaced without a lock (rename is atomic; a hint that
// goes back a little only costs a few stats). On S3 it is raised with If-Match, so
// writers on several hosts never move it backwards past what they read.
async function writeHint(store: Storage, file: string, seq: number): Promise<void> {
  const text = JSON.stringify({ sealedThroughSeq: seq, revision: seq });
  if (store.kind === 'fs') return store.put(file, text, { durable: false });
  for (;;) {
    const now = await store.readVersioned(file);
    if (now && hintSeq(now.bytes) >= seq) return;
    if (await store.putIfMatch(file, text, now?.etag ?? null)) return;
  }
}

function hintSeq(bytes: Buffer): number {
  try {
    const v = (JSON.parse(bytes.toString('utf8')) as { sealedThroughSeq?: unknown }).sealedThroughSeq;
    return Number.isSafeInteger(v) ? (v as number) : 0;
  } catch {
    return 0;
  }
}

/** Writes until the hint is current; false when a write failed. */
async function drain(file: string, p: Pending): Promise<boolean> {
  while (p.seq > p.written) {
    const seq = p.seq;
    try {
      await writeHint(p.store, file, seq);
    } catch {
      // A hint that cannot be written (directory removed, disk full) is not an error of
      // the seal that is already durable; the next seal tries again.
      return false;
    }
    p.written = seq;
  }
  return true;
}

/** Records `seq` as sealed in `file` (SEALED.json, on `store`) in the background. */
export function offerSealedHint(store: Storage, file: string, seq: number): void {
  let p = pending.get(file);
  if (!p) pending.set(file, (p = { store, seq: 0, written: 0, running: null }));
  p.seq = Math.max(p.seq, seq);
  if (p.running) return;
  p.running = drain(file, p).then((ok) => {
    p.running = null;
    if (!ok) return; // kept: the next offer writes again
    if (p.seq > p.written) offerSealedHint(p.store, file, p.seq); // offered after the loop ended
    else if (pending.get(file) === p) pending.delete(file);
  });
}

/** Waits until every hint offered so far was written (or failed), and the seals' temp names are gone. */
export async function settleSealedHints(): Promise<void> {
  for (;;) {
    const running = [...pending.values()].map((p) => p.running).filter((r): r is Promise<void> => r !== null);
    if (running.length === 0) break;
    await Promise.all(running);
  }
  await settleFileCleanups();
}
