// Temporal refuses an update with RESOURCE_EXHAUSTED while the workflow has its maximum
// of updates in flight (`history.maxInFlightUpdates`, 10 unless raised; the dev server
// raises it, see src/server/dev-server.ts). Every awaitMerged is answered within a bound
// (workflows/table.ts), so a slot frees within that bound: an update refused this way
// is asked again after a growing pause instead of failing the caller.

/** The server's "limit on number of concurrent in-flight updates has been reached". */
export function isUpdateLimit(e: unknown): boolean {
  for (let at: unknown = e, depth = 0; at && depth < 5; at = (at as { cause?: unknown }).cause, depth++) {
    const err = at as { code?: unknown; message?: unknown };
    if (typeof err.message === 'string' && /in-flight updates|RESOURCE_EXHAUSTED/i.test(err.message)) return true;
    if (err.code === 8) return true; // gRPC RESOURCE_EXHAUSTED
  }
  return false;
}

/** Runs `fn` until it is not refused for the update limit, pausing 100 ms doubling to 2 s; gives up after `maxWaitMs`. */
export async function retryWhileBusy<T>(fn: () => Promise<T>, maxWaitMs = 60_000): Promise<T> {
  const start = Date.now();
  for (let pause = 100; ; pause = Math.min(pause * 2, 2000)) {
    try {
      return await fn();
    } catch (e) {
      if (!isUpdateLimit(e) || Date.now() - start + pause > maxWaitMs) throw e;
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}
