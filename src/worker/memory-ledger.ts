import { admit, emptyLedger, headroomBytes, heldBytes, type AdmissionEvent, type Ledger } from '../policy/byte-ledger';

// A worker's byte ledger in process memory (invariant 6): the pure ledger of
// src/policy/byte-ledger.ts, with promises for what waits. It lives and dies with the
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
/**
 * Longest a unit waits for the SDK to mark the claim its task came through as used
 * (markSlotUsed arrives on its own schedule); then it takes any held claim.
 */
export const MARK_WAIT_MS = 1_000;

export class MemoryLedger {
  private ledger: Ledger;
  private readonly waiters = new Map<string, { resolve(): void; reject(e: Error): void }>();
  private readonly holdings = new Map<string, Holding>();
  /** Poll claims whose poll brought a task, oldest first: the next unit converts one of them. */
  private readonly usedClaims: string[] = [];
  /** Units waiting for their task's claim to be marked used, oldest first. */
  private readonly awaitingMark: ((claim: string) => void)[] = [];
  /** Units that took a held claim after MARK_WAIT_MS without a mark (0 while the SDK marks every claim). */
  unmarkedTakes = 0;
  /** Units that waited for their claim's mark, and how long in all (ms): what admission adds to a unit's run. */
  readonly markWaits = { count: 0, totalMs: 0, maxMs: 0 };
  /** Eager activity tasks: slots the SDK asked for, granted (slot and claim free at once), and used (the server handed the task over). */
  readonly eager = { asked: 0, granted: 0, used: 0 };
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
    const id = this.newClaimId();
    await this.acquire(id, bytes, { activity: 'poll' }, signal);
    return id;
  }

  /**
   * A poll claim only if it fits at once, ahead of nobody: for eager activity tasks,
   * which the SDK offers when a workflow task schedules them and which may not wait
   * (memory-slots.ts). Null when the bytes are not free now.
   */
  tryClaim(bytes: number): string | null {
    if (this.ledger.waiting.length > 0 || this.headroomBytes < bytes) return null;
    const id = this.newClaimId();
    this.apply({ type: 'request', id, bytes });
    if (!this.isHeld(id)) return null; // refused (not a byte count): nothing held
    this.holdings.set(id, { id, bytes, activity: 'poll', sinceMs: Date.now() });
    return id;
  }

  private newClaimId(): string {
    return `${CLAIM}${this.nextClaim++}`;
  }

  markClaimUsed(id: string): void {
    if (!this.isHeld(id)) return;
    const waiting = this.awaitingMark.shift();
    if (waiting) waiting(id);
    else this.usedClaims.push(id);
  }

  /**
   * A unit's reservation. It takes over the poll claim its task came through, so the
   * unit does not wait behind its own claim. Claims are interchangeable (all of the claim
   * size), so the oldest claim marked used will do. When none is marked yet but claims
   * are held, the SDK's mark is still on its way: the unit waits for it (at most
   * MARK_WAIT_MS) rather than take the claim of a poll still out, whose poller would then
   * poll with no bytes behind it, and whose own slot's release would later free the claim
   * this unit's poller still counts on. Without any claim (tests) it waits like any
   * request. `own`: a reservation this unit already holds (it took over its claim
   * earlier, see holdingWhileWaiting), taken over instead: taking a second claim robs a
   * poller the same way (the fleet-memory test saw a worker stall so).
   */
  async reserve(id: string, bytes: number, what: Omit<Holding, 'id' | 'bytes' | 'sinceMs'>, own?: string): Promise<void> {
    let from = own !== undefined && this.isHeld(own) ? own : this.takeUsedClaim();
    if (from === undefined && this.heldClaim() !== undefined) {
      const t0 = performance.now();
      from = await this.nextMarkedClaim();
      const ms = performance.now() - t0;
      this.markWaits.count++;
      this.markWaits.totalMs += ms;
      this.markWaits.maxMs = Math.max(this.markWaits.maxMs, ms);
      // Marked while held, but the continuation runs later.
      if (from !== undefined && !this.isHeld(from)) from = undefined;
    }
    from ??= this.heldClaim();
    if (from === undefined) return this.acquire(id, bytes, what);
    this.holdings.delete(from);
    return this.wait(id, bytes, what, { type: 'convert', from, id, bytes });
  }

  private takeUsedClaim(): string | undefined {
    while (this.usedClaims.length > 0) {
      const c = this.usedClaims.shift()!;
      if (this.isHeld(c)) return c;
    }
    return undefined;
  }

  private heldClaim(): string | undefined {
    return this.ledger.held.find((r) => r.id.startsWith(CLAIM))?.id;
  }

  /** The next claim marked used (handed to the oldest waiter first), or undefined after MARK_WAIT_MS. */
  private nextMarkedClaim(): Promise<string | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        const i = this.awaitingMark.indexOf(take);
        if (i >= 0) this.awaitingMark.splice(i, 1);
        this.unmarkedTakes++;
        resolve(undefined);
      }, MARK_WAIT_MS);
      timer.unref();
      const take = (claim: string) => {
        clearTimeout(timer);
        resolve(claim);
      };
      this.awaitingMark.push(take);
    });
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
