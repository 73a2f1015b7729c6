import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import { pidAlive } from './pid-alive.mjs';

// A lock file created with O_EXCL: works across processes on one host and on shared
// file systems that honour O_EXCL. A holder that died leaves its file behind; it is
// stale when its pid is gone (same host) or, for a holder on another host whose pid
// we cannot check, when it is older than FOREIGN_STALE_MS.

const FOREIGN_STALE_MS = 10 * 60_000;
// A lock file that cannot be parsed was caught between create and write; only after
// this long is it treated as the leftover of a holder that died in that instant.
const UNPARSABLE_STALE_MS = 10_000;
// Breaking a stale lock takes milliseconds; a breaker lock older than this is a leftover.
const BREAKER_STALE_MS = 30_000;

interface Holder {
  pid: number;
  host: string;
  token: string;
  at: number;
}

export class LockTimeoutError extends Error {
  constructor(lockPath: string, waitedMs: number, holder: string) {
    super(`${lockPath}: still locked after ${waitedMs} ms (holder ${holder})`);
    this.name = 'LockTimeoutError';
  }
}


const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function readHolder(lockPath: string): Promise<{ text: string; holder: Holder | null; ageMs: number } | null> {
  try {
    const [text, st] = await Promise.all([fs.readFile(lockPath, 'utf8'), fs.stat(lockPath)]);
    let holder: Holder | null = null;
    try {
      holder = JSON.parse(text) as Holder;
    } catch {
      holder = null;
    }
    return { text, holder, ageMs: Date.now() - st.mtimeMs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function isStale(h: { holder: Holder | null; ageMs: number }): boolean {
  if (!h.holder || typeof h.holder.pid !== 'number') return h.ageMs > UNPARSABLE_STALE_MS;
  if (h.holder.host === os.hostname()) return !pidAlive(h.holder.pid);
  return h.ageMs > FOREIGN_STALE_MS;
}

// Only one process breaks a given stale lock: breakers serialise on `<lock>.break`,
// and re-read the lock under it, so a fresh lock taken meanwhile is never removed.
async function breakStale(lockPath: string, staleText: string): Promise<void> {
  const breaker = `${lockPath}.break`;
  try {
    await fs.writeFile(breaker, String(process.pid), { flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const st = await fs.stat(breaker).catch(() => null);
    if (st && Date.now() - st.mtimeMs > BREAKER_STALE_MS) await fs.rm(breaker, { force: true });
    return;
  }
  try {
    const now = await readHolder(lockPath);
    if (now && now.text === staleText) await fs.rm(lockPath, { force: true });
  } finally {
    await fs.rm(breaker, { force: true });
  }
}

export interface LockOptions {
  timeoutMs?: number;
}

/** Run `fn` while holding the lock file; waits (with backoff) for other holders. */
export async function withFileLock<T>(lockPath: string, fn: () => Promise<T>, opts: LockOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const me: Holder = { pid: process.pid, host: os.hostname(), token: randomBytes(8).toString('hex'), at: Date.now() };
  const mine = JSON.stringify(me);
  const started = Date.now();
  let backoff = 2;
  for (;;) {
    try {
      await fs.writeFile(lockPath, mine, { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const h = await readHolder(lockPath);
    if (h && isStale(h)) {
      await breakStale(lockPath, h.text);
      continue;
    }
    const waited = Date.now() - started;
    if (waited > timeoutMs) throw new LockTimeoutError(lockPath, waited, h?.text ?? 'gone');
    await sleep(backoff + Math.random() * backoff);
    backoff = Math.min(backoff * 2, 50);
  }
  try {
    return await fn();
  } finally {
    // Remove only our own lock: if it was broken as stale (we were presumed dead),
    // the file may now belong to someone else.
    const h = await readHolder(lockPath);
    if (h && h.text === mine) await fs.rm(lockPath, { force: true });
  }
}
