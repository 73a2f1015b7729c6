// Whether a process of this host is alive. Plain JavaScript so that both the lock of
// src/storage/file-lock.ts and scripts/ensure-temporal.mjs (which runs before npm ci,
// without TypeScript) use this one copy. EPERM: alive, but owned by another user.
export function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}
