// Preparations of one table, in one worker process, run one at a time in arrival order.
//
// Why: a preparation's work (hashing keys, gathering columns, encoding) runs on one
// JavaScript thread: a dedup thread (dedup-threads.ts, where the worker has them) or the
// worker's own. Two preparations of one table interleaved there do not finish sooner
// together; each finishes about when both are done. And a table
// commits one unit at a time, so the one that finishes first is the one that can take
// the turn: interleaved, the table's next commit waits for both. Measured (bench
// merge-throughput, 2 x 5 x 100k, bench/README.md) as the first commit starting later
// and every workflow task in between waiting on the busy thread.
// Preparations of other tables still interleave (one big table must not hold up many
// small ones), and those of one table on different worker processes still run in parallel.
//
// Only an ordering: a waiter goes ahead anyway after `maxWaitMs` (kept well inside the
// activity's heartbeat timeout, since it reports no progress while it waits), and a
// cancelled one stops waiting at once.

export class OneAtATime {
  private readonly tails = new Map<string, Promise<void>>();

  /** How many keys have work queued or running (for tests). */
  get busyKeys(): number {
    return this.tails.size;
  }

  async run<T>(key: string, opts: { maxWaitMs: number; cancelled?: Promise<never> }, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key);
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    // The next one waits for this one and, if this one went ahead early, for the ones before it too.
    const tail = before ? Promise.all([before, mine]).then(() => undefined) : mine;
    this.tails.set(key, tail);
    try {
      if (before) await waitAtMost(before, opts.maxWaitMs, opts.cancelled);
      return await fn();
    } finally {
      release();
      void tail.then(() => {
        if (this.tails.get(key) === tail) this.tails.delete(key);
      });
    }
  }
}

async function waitAtMost(p: Promise<void>, ms: number, cancelled?: Promise<never>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([p, timeout, ...(cancelled ? [cancelled] : [])]);
  } finally {
    clearTimeout(timer);
  }
}
