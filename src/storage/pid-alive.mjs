// Whether a process of this host is alive. Plain JavaScript so that the lock file of
// src/storage/lock-file.mjs, which scripts/ensure-temporal.mjs runs before npm ci
// (without TypeScript), uses this one copy too. EPERM: alive, but owned by another user.
export function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}
