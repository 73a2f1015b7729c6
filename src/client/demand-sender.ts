import type { Demand } from '../wire';

// Sends a writer's demand to its table without making seals wait for it. A seal is
// durable once sealGeneration returns; the demand only tells the table sooner than its
// snapshot would. Demand folding is monotone (invariant 5), so only the highest
// sealed-through seq per shard matters: while one signal is in flight, later seals
// coalesce into the next one, and a writer sealing N generations sends far fewer than N
// signals. A failed signal is retried a few times, then reported by flush(); the
// table's snapshot picks the generation up in any case.

export interface DemandSenderOptions {
  /** Attempts per batch before it is given up (the snapshot recovers it). */
  attempts?: number;
  /** Wait before the second attempt; doubled for each further one. */
  retryDelayMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class DemandSender {
  private readonly pending = new Map<string, Demand>();
  private running: Promise<void> | null = null;
  private lastError: string | undefined;
  /** Signals sent, for benchmarks and tests: fewer than seals when seals coalesce. */
  signalsSent = 0;

  constructor(
    private readonly send: (demands: Demand[]) => Promise<void>,
    private readonly opts: DemandSenderOptions = {},
  ) {}

  offer(d: Demand): void {
    const cur = this.pending.get(d.shard);
    if (!cur || d.sealedThroughSeq > cur.sealedThroughSeq) this.pending.set(d.shard, d);
    this.kick();
  }

  /** Waits until everything offered so far was sent or given up; returns the last failure since the previous flush. */
  async flush(): Promise<string | undefined> {
    while (this.running) await this.running;
    const e = this.lastError;
    this.lastError = undefined;
    return e;
  }

  private kick(): void {
    if (this.running || this.pending.size === 0) return;
    this.running = this.drain().finally(() => {
      this.running = null;
      this.kick(); // offers that arrived after the loop's last check
    });
  }

  private async drain(): Promise<void> {
    const attempts = Math.max(1, this.opts.attempts ?? 3);
    while (this.pending.size > 0) {
      const batch = [...this.pending.values()].sort((a, b) => (a.shard < b.shard ? -1 : 1));
      this.pending.clear();
      for (let attempt = 1; ; attempt++) {
        try {
          await this.send(batch);
          this.signalsSent++;
          break;
        } catch (err) {
          if (attempt >= attempts) {
            this.lastError = err instanceof Error ? err.message : String(err);
            break;
          }
          await (this.opts.sleep ?? defaultSleep)((this.opts.retryDelayMs ?? 200) * 2 ** (attempt - 1));
        }
      }
    }
  }
}
