import type { Demand } from '../messages/payload-schemas';
import { yieldToEventLoop } from '../util/event-loop';
import { sleep } from '../util/sleep';

// Sends a writer's demand to its table without making seals wait for it. A seal is
// durable once sealGeneration returns; the demand only tells the table sooner than its
// snapshot would. Demand folding is monotone (invariant 5), so only the highest
// sealed-through seq per shard matters: while one signal is in flight, later seals
// coalesce into the next one, and a writer sealing N generations sends far fewer than N
// signals. Signals are also spaced at least minIntervalMs apart (100 ms): the first after
// a quiet spell goes at once, and a writer sealing many small generations a second sends
// ~10 signals a second instead of one per seal. Each signal is a history event and a
// workflow task of its own, and a hot table's history then fills ~2-3x more slowly: it
// continues as new less often, and each continue-as-new that a signal arriving in its
// last task fails costs a full replay of the run (measured: ~750 ms for 500 events).
// A failed signal is retried a few times; then, if the server is unreachable
// (an outage of the Temporal cluster), the demand is held, merged with later seals, and
// sent again every redeliverMs until it goes through: it reaches the table when the
// cluster is back. A request the client refuses (bad input) is dropped, not held.
// flush() reports a failure while some demand is still undelivered; the table's
// snapshot picks the generations up in any case (see README, "Running on a cluster").

export interface DemandSenderOptions {
  /** Attempts per batch before it is held for redelivery. */
  attempts?: number;
  /** Wait before the second attempt; doubled for each further one. */
  retryDelayMs?: number;
  /** How long undelivered demand waits before the next round of attempts. */
  redeliverMs?: number;
  /** Least time between the starts of two signals (flush() does not wait for it); 0: none. */
  minIntervalMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

export class DemandSender {
  private readonly pending = new Map<string, Demand>();
  private running: Promise<void> | null = null;
  /** Why the held demand is undelivered (cleared when it goes through). */
  private heldError: string | undefined;
  /** A refused batch, reported once by the next flush. */
  private refusedError: string | undefined;
  /** Undelivered demand is not retried by offers before this time (the timer or flush retries it). */
  private holdUntilMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** When the last signal was sent (its first attempt), for the spacing. */
  private lastSentAtMs = Number.NEGATIVE_INFINITY;
  /** Set by flush(): the next signal goes without waiting out the spacing. */
  private urgent = false;
  private wake: (() => void) | undefined;
  /** Signals sent, for benchmarks and tests: fewer than seals when seals coalesce. */
  signalsSent = 0;

  constructor(
    private readonly send: (demands: Demand[]) => Promise<void>,
    private readonly opts: DemandSenderOptions = {},
  ) {}

  offer(d: Demand): void {
    this.merge(d);
    this.kick(false);
  }

  /** Keeps the highest seq per shard (monotone folding makes the rest redundant). */
  private merge(d: Demand): void {
    const cur = this.pending.get(d.shard);
    if (!cur || d.sealedThroughSeq > cur.sealedThroughSeq) this.pending.set(d.shard, d);
  }

  /** Demand offered and not yet delivered (held through an outage, or in the next batch). */
  get undelivered(): number {
    return this.pending.size;
  }

  /**
   * Sends what is pending now (held demand too) and waits until it was sent or held
   * again, at most `timeoutMs` when given. Returns the failure if some demand is still
   * undelivered, else undefined.
   */
  async flush(timeoutMs?: number): Promise<string | undefined> {
    this.urgent = true;
    this.wake?.();
    this.kick(true);
    const done = (async () => {
      while (this.running) await this.running;
    })();
    if (timeoutMs === undefined) await done;
    else {
      let t: NodeJS.Timeout | undefined;
      await Promise.race([done, new Promise((r) => (t = setTimeout(r, timeoutMs)))]);
      clearTimeout(t);
    }
    this.urgent = false;
    const undelivered = this.pending.size > 0 || this.running !== null;
    const e = this.refusedError ?? (undelivered ? (this.heldError ?? 'demand not delivered yet') : undefined);
    this.refusedError = undefined;
    return e;
  }

  /** No more redelivery (the connection is about to close). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.wake?.();
  }

  private kick(force: boolean): void {
    if (this.stopped || this.running || this.pending.size === 0) return;
    if (!force && Date.now() < this.holdUntilMs) return;
    // From the event loop's next turn: a signal's encoding and gRPC call took 0.2-1 ms of
    // this thread, which would otherwise delay the seal that offered it (its caller).
    this.running = yieldToEventLoop()
      .then(() => this.drain())
      .finally(() => {
        this.running = null;
        this.kick(false); // offers that arrived after the loop's last check
      });
  }

  private hold(batch: Demand[]): void {
    for (const d of batch) this.merge(d);
    const wait = this.opts.redeliverMs ?? 5000;
    this.holdUntilMs = Date.now() + wait;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(true), wait);
    this.timer.unref();
  }

  /** How long until minIntervalMs after the last signal's start; 0 when flush() asks for it now. */
  private spacingLeftMs(): number {
    return this.urgent ? 0 : Math.max(0, this.lastSentAtMs + (this.opts.minIntervalMs ?? 100) - Date.now());
  }

  /** A sleep flush() and stop() cut short. */
  private async sleepSpacing(wait: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const t = setTimeout(done, wait);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wake = done;
    });
    this.wake = undefined;
  }

  private async drain(): Promise<void> {
    const attempts = Math.max(1, this.opts.attempts ?? 3);
    while (this.pending.size > 0) {
      // Without a wait the batch is taken in this same tick (seals offered later coalesce).
      const wait = this.spacingLeftMs();
      if (wait > 0) await this.sleepSpacing(wait);
      if (this.stopped) return;
      const batch = [...this.pending.values()].sort((a, b) => (a.shard < b.shard ? -1 : 1));
      this.pending.clear();
      for (let attempt = 1; ; attempt++) {
        try {
          if (attempt === 1) this.lastSentAtMs = Date.now();
          await this.send(batch);
          this.signalsSent++;
          this.heldError = undefined;
          break;
        } catch (err) {
          const refused = err instanceof Error && err.name === 'RequestRefusedError';
          const why = err instanceof Error ? err.message : String(err);
          if (refused) {
            this.refusedError = why;
            break;
          }
          if (attempt >= attempts) {
            this.heldError = why;
            this.hold(batch);
            return;
          }
          await (this.opts.sleep ?? sleep)((this.opts.retryDelayMs ?? 200) * 2 ** (attempt - 1));
        }
      }
    }
  }
}
