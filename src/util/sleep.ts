// The one timer-based wait of Node code (workflows use the SDK's `sleep`, which is
// durable and replayed).

/** Resolves after `ms`, or as soon as `signal` aborts (resolves, never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
