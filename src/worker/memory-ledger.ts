import { admit, emptyLedger, headroomBytes, heldBytes, type AdmissionEvent, type Ledger } from '../policy/admission';

// A worker's byte ledger in process memory (invariant 6): the pure ledger of
// src/policy/admission.ts, with promises for what waits. It lives and dies with the
// process, so a worker killed with kill -9 takes its reservations with it and nothing
// elsewhere has to expire them.

/** What `turnstile workers` shows of a running reservation. */
export interface Holding {
  id: string;
  bytes: number;
  /** The activity type, or "poll" for a claim a task poller holds. */
  activity: string;
  /** "table/unit" when the reservation is a unit's. */
  unit?: string;
  sinceMs: number;
}

const CLAIM = 'claim-';

export class MemoryLedger {
  private ledger: Ledger;
  private readonly waiters = new Map<string, { resolve(): void; reject(e: Error): void }>();
  private readonly holdings = new Map<string, Holding>();
  /** Poll claims whose poll brought a task, oldest first: the next unit converts one of them. */
  private readonly usedClaims: string[] = [];
  private nextClaim = 1;
  /** Called after every change of what is held or waiting (the registry record follows it). */
  onChange: () => void = () => undefined;

  constructor(readonly budgetBytes: number) {
    this.ledger = emptyLedger(budgetBytes);
  }

  get reservedBytes(): number {
    return heldBytes(this.ledger);
  }

  get headroomBytes(): number {
    return headroomBytes(this.ledger);
  }

  get waitingCount(): number {
    return this.ledger.waiting.length;
  }

  /** Running reservations (poll claims included, marked "poll"). */
  list(): Holding[] {
    return this.ledger.held.map((r) => this.holdings.get(r.id) ?? { id: r.id, bytes: r.bytes, activity: 'unknown', sinceMs: 0 });
  }

  /** Waits until `bytes` fit (in arrival order); rejects at once if they never can. */
  acquire(id: string, bytes: number, what: Omit<Holding, 'id' | 'bytes' | 'sinceMs'>, signal?: AbortSignal): Promise<void> {
    return this.wait(id, bytes, what, { type: 'request', id, bytes }, signal);
  }

  /** A poll claim: `bytes` of headroom held while a poller may bring a task of at most that size. */
  async claim(bytes: number, signal?: AbortSignal): Promise<string> {
    const id = `${CLAIM}${this.nextClaim++}`;
    await this.acquire(id, bytes, { activity: 'poll' }, signal);
    return id;
  }

  markClaimUsed(id: string): void {
    if (this.isHeld(id)) this.usedClaims.push(id);
  }

  /**
   * A unit's reservation. It takes over a poll claim when there is one (the claim that
   * brought it, or any: claims are interchangeable, all of the claim size), so the unit
   * does not wait behind its own claim; without one (tests, or a claim already taken) it
   * waits like any request. `own`: a reservation this unit already holds (it took over
   * the claim earlier), taken over instead: a unit that took a second claim would leave
   * a poller polling with no bytes behind it, whose task then waits in the worker
   * behind the claims of later polls (the fleet-memory test saw a worker stall so).
   */
  reserve(id: string, bytes: number, what: Omit<Holding, 'id' | 'bytes' | 'sinceMs'>, own?: string): Promise<void> {
    let from = own !== undefined && this.isHeld(own) ? own : undefined;
    while (from === undefined && this.usedClaims.length > 0) {
      const c = this.usedClaims.shift()!;
      if (this.isHeld(c)) from = c;
    }
    from ??= this.ledger.held.find((r) => r.id.startsWith(CLAIM))?.id;
    if (from === undefined) return this.acquire(id, bytes, what);
    this.holdings.delete(from);
    return this.wait(id, bytes, what, { type: 'convert', from, id, bytes });
  }

  release(id: string): void {
    this.holdings.delete(id);
    this.waiters.delete(id);
    this.apply({ type: 'release', id });
  }

  private isHeld(id: string): boolean {
    return this.ledger.held.some((r) => r.id === id);
  }

  private wait(id: string, bytes: number, what: Omit<Holding, 'id' | 'bytes' | 'sinceMs'>, e: AdmissionEvent, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // The SDK expects an aborted reservation to reject with the signal's own reason.
      const onAbort = () => {
        this.release(id);
        reject(signal?.reason ?? new Error(`${id}: aborted while waiting for ${bytes} bytes`));
      };
      this.waiters.set(id, {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          this.holdings.set(id, { id, bytes, ...what, sinceMs: Date.now() });
          resolve();
        },
        reject,
      });
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.apply(e);
    });
  }

  private apply(e: AdmissionEvent): void {
    const r = admit(this.ledger, e);
    this.ledger = r.ledger;
    this.onChange();
    for (const id of r.admitted) {
      const w = this.waiters.get(id);
      this.waiters.delete(id);
      w?.resolve();
    }
    for (const { id, why } of r.refused) {
      const w = this.waiters.get(id);
      this.waiters.delete(id);
      w?.reject(new Error(why));
    }
  }
}
