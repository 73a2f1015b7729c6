import { describe, expect, it } from 'vitest';
import { MARK_WAIT_MS, MemoryLedger } from '../../src/worker/memory-ledger';
import { memorySlotSupplier } from '../../src/worker/memory-slots';
import { fleetMemory } from '../../src/worker/fleet-memory';
import { CLAIMS_PER_WORKER, maxUnitBytes, MIN_CLAIMED_UNIT_BYTES, preparedCacheBytes } from '../../src/worker/reservation-sizes';
import fc from 'fast-check';
import { sleep } from '../../src/util/sleep';

// The worker's side of admission without a server: poll claims through the slot
// supplier, a unit taking over the claim its task came through, releases, aborts.

const settled = async (p: Promise<unknown>): Promise<boolean> => {
  let done = false;
  void p.then(() => (done = true), () => (done = true));
  await sleep(10);
  return done;
};
const ctx = { slotType: 'activity' as const, taskQueue: 'q', workerIdentity: 'w', workerBuildId: '', isSticky: false };

describe('memory ledger and slot supplier', () => {
  it('a worker of any budget holds two poll claims at once beside its prepared cache', async () => {
    // One poll at a time per worker made 1,000 tables fall behind (bench/README.md):
    // the claim was half the budget, but units share the budget less the cache.
    // Two claims always fit; a large budget holds one per activity slot, each of a unit of at least 1 GiB.
    fc.assert(
      fc.property(fc.integer({ min: 64 * 2 ** 20, max: 2 ** 40 }), (budget) => {
        const share = budget - preparedCacheBytes(budget);
        const claims = Math.floor(share / maxUnitBytes(budget));
        expect(claims).toBeGreaterThanOrEqual(2);
        expect(claims).toBeGreaterThanOrEqual(Math.min(CLAIMS_PER_WORKER, Math.floor(share / MIN_CLAIMED_UNIT_BYTES)));
        expect(maxUnitBytes(budget)).toBeGreaterThanOrEqual(Math.min(MIN_CLAIMED_UNIT_BYTES, Math.floor(share / 2)));
      }),
    );
    // 1 GiB: two claims of 448 MiB; 12 GiB: eight of ~1.47 GiB (one per slot).
    for (const [budgetBytes, polls] of [[2 ** 30, 2], [12 * 2 ** 30, 8]] as const) {
      const memory = fleetMemory({ budgetBytes, dataRoot: '/nonexistent', maxSlots: 9 });
      const slots = (memory.tuner as { activityTaskSlotSupplier: ReturnType<typeof memorySlotSupplier> }).activityTaskSlotSupplier;
      for (let i = 0; i < polls; i++) expect(await settled(slots.reserveSlot(ctx, new AbortController().signal))).toBe(true);
      expect(await settled(slots.reserveSlot(ctx, new AbortController().signal))).toBe(false);
    }
  });

  it('polls only with a claim; a unit converts it, so the next poll may claim again', async () => {
    const ledger = new MemoryLedger(1000);
    const slots = memorySlotSupplier(ledger, { claimBytes: () => 400, maxSlots: 8 });
    const first = await slots.reserveSlot(ctx, new AbortController().signal);
    await slots.reserveSlot(ctx, new AbortController().signal);
    const third = slots.reserveSlot(ctx, new AbortController().signal);
    expect(await settled(third)).toBe(false); // 800 claimed, 400 more would exceed 1000
    slots.markSlotUsed({ slotInfo: { type: 'activity', activityType: 'prepareMerge' }, permit: first });
    await ledger.reserve('unit1', 150, { activity: 'prepareMerge' });
    expect(await settled(third)).toBe(true); // 150 + 400 + 400 fits
    expect(ledger.reservedBytes).toBe(950);
    expect(ledger.list().map((h) => h.activity).sort()).toEqual(['poll', 'poll', 'prepareMerge']);
    // The slot of the converted claim ends with the activity: the unit releases its own bytes.
    slots.releaseSlot({ slotInfo: { type: 'activity', activityType: 'prepareMerge' }, permit: first });
    ledger.release('unit1');
    expect(ledger.reservedBytes).toBe(800);
  });

  it('an eager task gets a slot and a claim only when both are free at once, and its unit converts the claim', async () => {
    const info = { slotInfo: { type: 'activity' as const, activityType: 'commitMerge' } };
    const ledger = new MemoryLedger(1000);
    const slots = memorySlotSupplier(ledger, { claimBytes: () => 400, maxSlots: 8 });
    const eager = slots.tryReserveSlot(ctx);
    expect(eager).not.toBeNull();
    expect(ledger.reservedBytes).toBe(400);
    // Its unit takes over the claim once the SDK marks it used, as for a polled task.
    slots.markSlotUsed({ ...info, permit: eager! });
    await ledger.reserve('unit1', 100, { activity: 'commitMerge' });
    expect(ledger.reservedBytes).toBe(100);
    const poll = await slots.reserveSlot(ctx, new AbortController().signal);
    const secondPoll = await slots.reserveSlot(ctx, new AbortController().signal);
    // 100 + 400 + 400 held: another claim does not fit now, so no eager task (the server
    // then queues the activity as usual) and nothing more is held.
    expect(slots.tryReserveSlot(ctx)).toBeNull();
    expect(ledger.reservedBytes).toBe(900);
    // Nor while a request waits for bytes: an eager task does not jump that line.
    slots.releaseSlot({ ...info, permit: secondPoll });
    const big = ledger.acquire('big', 700, { activity: 'prepareMerge' });
    expect(await settled(big)).toBe(false); // 500 held, 500 free
    expect(slots.tryReserveSlot(ctx)).toBeNull();
    ledger.release('big');
    // The SDK gives an eager permit back unused when the server did not hand the task
    // over: its claim and its slot are free again.
    const unused = slots.tryReserveSlot(ctx);
    expect(ledger.reservedBytes).toBe(900);
    slots.releaseSlot({ ...info, permit: unused! });
    expect(ledger.reservedBytes).toBe(500);
    slots.releaseSlot({ ...info, permit: eager! });
    ledger.release('unit1');
    slots.releaseSlot({ ...info, permit: poll });
    expect(ledger.reservedBytes).toBe(0);

    // Slots count too: with every slot taken there is no eager task, whatever the bytes.
    const roomy = memorySlotSupplier(new MemoryLedger(10_000), { claimBytes: () => 400, maxSlots: 2 });
    const a = roomy.tryReserveSlot(ctx);
    const b = roomy.tryReserveSlot(ctx);
    expect([a, b].every((p) => p !== null)).toBe(true);
    expect(roomy.tryReserveSlot(ctx)).toBeNull();
    roomy.releaseSlot({ ...info, permit: a! });
    expect(roomy.tryReserveSlot(ctx)).not.toBeNull();
  });

  it('a unit bigger than its claim waits first in line; an aborted poll rejects with the signal reason', async () => {
    const ledger = new MemoryLedger(1000);
    const slots = memorySlotSupplier(ledger, { claimBytes: () => 400, maxSlots: 8 });
    const permit = await slots.reserveSlot(ctx, new AbortController().signal);
    await ledger.acquire('other', 500, { activity: 'commitMerge' });
    slots.markSlotUsed({ slotInfo: { type: 'activity', activityType: 'prepareMerge' }, permit });
    const big = ledger.reserve('big', 600, { activity: 'prepareMerge' });
    const abort = new AbortController();
    const poll = slots.reserveSlot(ctx, abort.signal);
    expect(await settled(big)).toBe(false);
    abort.abort(new Error('shutdown'));
    await expect(poll).rejects.toThrow('shutdown');
    ledger.release('other');
    await big;
    expect(ledger.reservedBytes).toBe(600);
    await expect(ledger.acquire('huge', 1001, { activity: 'x' })).rejects.toThrow('huge: needs 1001 bytes, more than the whole budget of 1000');
  });

  it("a unit whose claim the SDK marks used only after it reserves takes that claim, not the claim of a poll still out", async () => {
    // markSlotUsed reaches JavaScript on its own schedule. Taking another poll's claim
    // meanwhile left that poller with no bytes behind it, and the late-marked claim was
    // then freed with the first task's slot: the worker counted bytes nobody held.
    const ledger = new MemoryLedger(1000);
    const slots = memorySlotSupplier(ledger, { claimBytes: () => 400, maxSlots: 8 });
    const out = await slots.reserveSlot(ctx, new AbortController().signal); // polling, no task yet
    const came = await slots.reserveSlot(ctx, new AbortController().signal); // brought a task
    const unit = ledger.reserve('unit1', 100, { activity: 'snapshot' });
    expect(await settled(unit)).toBe(false); // waits for the mark
    slots.markSlotUsed({ slotInfo: { type: 'activity', activityType: 'snapshot' }, permit: came });
    await unit;
    const claimOf = (p: unknown) => (p as { claim: string }).claim;
    expect(ledger.list().map((h) => h.id).sort()).toEqual([claimOf(out), 'unit1'].sort());
    // The wait is counted (turnstile workers and the many-tables bench report it).
    expect(ledger.markWaits.count).toBe(1);
    expect(ledger.unmarkedTakes).toBe(0);
    slots.releaseSlot({ slotInfo: { type: 'activity', activityType: 'snapshot' }, permit: came });
    ledger.release('unit1');
    // The poll still out keeps its claim's bytes.
    expect(ledger.list().map((h) => h.id)).toEqual([claimOf(out)]);
    expect(ledger.reservedBytes).toBe(400);
  });

  it('without a mark within MARK_WAIT_MS a unit takes any held claim, so it never hangs', async () => {
    const ledger = new MemoryLedger(1000);
    const claim = await ledger.claim(400);
    const t0 = Date.now();
    await ledger.reserve('unit1', 100, { activity: 'snapshot' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(MARK_WAIT_MS - 50);
    expect(ledger.list().map((h) => h.id)).toEqual(['unit1']);
    expect(ledger.unmarkedTakes).toBe(1);
    expect(ledger.markWaits.count).toBe(1);
    expect(ledger.markWaits.maxMs).toBeGreaterThanOrEqual(MARK_WAIT_MS - 50);
    ledger.release(claim);
    expect(ledger.reservedBytes).toBe(100);
  });
});
