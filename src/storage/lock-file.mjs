// A lock file created with O_EXCL: works across processes on one host and on shared
// file systems that honour O_EXCL. Plain JavaScript, so that both the storage (the
// compare-and-set of fs-storage.ts) and the build scripts (scripts/ensure-temporal.mjs,
// which runs before npm ci, without TypeScript) use this one copy: the storage waits
// asynchronously (withFileLock), a build script synchronously (withFileLockSync).
//
// A holder that died leaves its file behind; it is stale when its pid is gone (same
// host) or, for a holder on another host whose pid we cannot check, when it is older
// than FOREIGN_STALE_MS. Two waiters can find the same dead holder: if both simply
// removed the lock, the second could remove the lock the first had just taken. So
// breakers serialise on `<lock>.break` and remove the lock only if it still holds the
// text they found stale.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import { pidAlive } from './pid-alive.mjs';

const FOREIGN_STALE_MS = 10 * 60_000;
// A lock file that cannot be parsed was caught between create and write; only after
// this long is it treated as the leftover of a holder that died in that instant.
const UNPARSABLE_STALE_MS = 10_000;
// Breaking a stale lock takes milliseconds; a breaker lock older than this is a leftover.
const BREAKER_STALE_MS = 30_000;

export class LockTimeoutError extends Error {
  constructor(lockPath, waitedMs, holder) {
    super(`${lockPath}: still locked after ${waitedMs} ms (holder ${holder})`);
    this.name = 'LockTimeoutError';
  }
}

/** What a holder writes into its lock: pid, host and a token of this hold, as JSON. */
export function holderText() {
  return JSON.stringify({ pid: process.pid, host: os.hostname(), token: randomBytes(8).toString('hex'), at: Date.now() });
}

/** The holder's pid and host; a bare pid is a holder on this host. Null when unparsable. */
function parseHolder(text) {
  if (/^\d+$/.test(text)) return Number(text) > 0 ? { pid: Number(text), host: os.hostname() } : null;
  try {
    const h = JSON.parse(text);
    return h && typeof h.pid === 'number' && h.pid > 0 ? h : null;
  } catch {
    return null;
  }
}

export function isStale(text, ageMs) {
  const h = parseHolder(text);
  if (!h) return ageMs > UNPARSABLE_STALE_MS;
  if (h.host === os.hostname()) return !pidAlive(h.pid);
  return ageMs > FOREIGN_STALE_MS;
}

// The algorithm, once, as steps an I/O driver carries out: { create } answers whether
// the file was created (false: it exists), { read } the file's text and age or null,
// { remove } and { wait } nothing.

function* breakStale(lockPath, staleText) {
  const breaker = `${lockPath}.break`;
  if (!(yield { create: breaker, text: String(process.pid) })) {
    const b = yield { read: breaker };
    if (b && b.ageMs > BREAKER_STALE_MS) yield { remove: breaker };
    return;
  }
  try {
    const now = yield { read: lockPath };
    if (now && now.text === staleText) yield { remove: lockPath };
  } finally {
    yield { remove: breaker };
  }
}

function* acquire(lockPath, mine, opts) {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const maxWaitMs = opts.maxWaitMs ?? 50;
  const started = Date.now();
  let backoff = 2;
  for (;;) {
    if (yield { create: lockPath, text: mine }) return;
    const h = yield { read: lockPath };
    if (h && isStale(h.text, h.ageMs)) {
      yield* breakStale(lockPath, h.text);
      continue;
    }
    const waited = Date.now() - started;
    if (waited > timeoutMs) throw new LockTimeoutError(lockPath, waited, h?.text ?? 'gone');
    if (h) opts.onWait?.(h.text, waited);
    yield { wait: backoff + Math.random() * backoff };
    backoff = Math.min(backoff * 2, maxWaitMs);
  }
}

function* release(lockPath, mine) {
  // Remove only our own lock: if it was broken as stale (we were presumed dead), the
  // file may now belong to someone else.
  const h = yield { read: lockPath };
  if (h && h.text === mine) yield { remove: lockPath };
}

const code = (e) => e?.code;

async function runAsync(steps) {
  let r = steps.next();
  while (!r.done) {
    const s = r.value;
    let answer;
    try {
      if ('create' in s) {
        try {
          await fsp.writeFile(s.create, s.text, { flag: 'wx' });
          answer = true;
        } catch (e) {
          if (code(e) !== 'EEXIST') throw e;
          answer = false;
        }
      } else if ('read' in s) {
        try {
          const [text, st] = await Promise.all([fsp.readFile(s.read, 'utf8'), fsp.stat(s.read)]);
          answer = { text, ageMs: Date.now() - st.mtimeMs };
        } catch (e) {
          if (code(e) !== 'ENOENT') throw e;
          answer = null;
        }
      } else if ('remove' in s) await fsp.rm(s.remove, { force: true });
      else await new Promise((resolve) => setTimeout(resolve, s.wait));
    } catch (e) {
      r = steps.throw(e);
      continue;
    }
    r = steps.next(answer);
  }
  return r.value;
}

function runSync(steps) {
  let r = steps.next();
  while (!r.done) {
    const s = r.value;
    let answer;
    try {
      if ('create' in s) {
        try {
          fs.writeFileSync(s.create, s.text, { flag: 'wx' });
          answer = true;
        } catch (e) {
          if (code(e) !== 'EEXIST') throw e;
          answer = false;
        }
      } else if ('read' in s) {
        try {
          const text = fs.readFileSync(s.read, 'utf8');
          const st = fs.statSync(s.read);
          answer = { text, ageMs: Date.now() - st.mtimeMs };
        } catch (e) {
          if (code(e) !== 'ENOENT') throw e;
          answer = null;
        }
      } else if ('remove' in s) fs.rmSync(s.remove, { force: true });
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, s.wait);
    } catch (e) {
      r = steps.throw(e);
      continue;
    }
    r = steps.next(answer);
  }
  return r.value;
}

/** Runs `fn` while holding the lock file; waits (with backoff) for other holders. */
export async function withFileLock(lockPath, fn, opts = {}) {
  const mine = opts.text ?? holderText();
  await runAsync(acquire(lockPath, mine, opts));
  try {
    return await fn();
  } finally {
    await runAsync(release(lockPath, mine));
  }
}

/** withFileLock for scripts: blocks the thread while it waits. */
export function withFileLockSync(lockPath, fn, opts = {}) {
  const mine = opts.text ?? holderText();
  runSync(acquire(lockPath, mine, opts));
  try {
    return fn();
  } finally {
    runSync(release(lockPath, mine));
  }
}
