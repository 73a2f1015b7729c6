import { afterEach, describe, expect, test, vi } from 'vitest';
import { DemandSender } from '../../src/client/demand-sender';
import type { Demand } from '../../src/messages/payload-schemas';

// The sender keeps seals off the signal's critical path: one signal in flight, later
// seals coalesced per shard to their highest seq, failures retried then reported.
// Tests of its timing (spacing, redelivery) run on fake timers: the sender is plain
// client code, and a loaded machine must not decide whether they pass.

function gate() {
  let open!: () => void;
  const p = new Promise<void>((r) => (open = r));
  return { p, open };
}

const d = (shard: string, seq: number): Demand => ({ shard, sealedThroughSeq: seq, revision: seq });

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

afterEach(() => {
  vi.useRealTimers();
});

describe('DemandSender', () => {
  test('coalesces what arrives while a signal is in flight into one signal with the highest seq per shard', async () => {
    const sent: Demand[][] = [];
    const first = gate();
    const s = new DemandSender(async (ds) => {
      sent.push(ds);
      if (sent.length === 1) await first.p;
    });
    s.offer(d('s0', 1));
    await nextTurn(); // the first signal starts on the event loop's next turn
    expect(sent).toEqual([[d('s0', 1)]]);
    for (let i = 2; i <= 9; i++) s.offer(d('s0', i));
    s.offer(d('s1', 4));
    s.offer(d('s1', 3)); // older than what is pending: ignored
    first.open();
    expect(await s.flush()).toBeUndefined();
    expect(sent).toEqual([[d('s0', 1)], [d('s0', 9), d('s1', 4)]]);
    expect(s.signalsSent).toBe(2);
  });

  test('an offer made as the loop ends is still sent', async () => {
    const sent: Demand[][] = [];
    const s = new DemandSender(async (ds) => {
      sent.push(ds);
    });
    s.offer(d('s0', 1));
    await Promise.resolve();
    s.offer(d('s0', 2));
    await s.flush();
    expect(sent.flat().map((x) => x.sealedThroughSeq)).toContain(2);
    expect(sent.flat().at(-1)).toEqual(d('s0', 2));
  });

  test('retries a failing signal, then holds it: reported while undelivered, retried by the next flush', async () => {
    let calls = 0;
    const delays: number[] = [];
    const s = new DemandSender(
      () => {
        calls++;
        return Promise.reject(new Error('no server'));
      },
      { attempts: 3, retryDelayMs: 10, redeliverMs: 60_000, sleep: async (ms) => void delays.push(ms) },
    );
    s.offer(d('s0', 1));
    expect(await s.flush()).toBe('no server');
    expect(calls).toBe(3);
    expect(delays).toEqual([10, 20]);
    expect(s.undelivered).toBe(1);
    expect(await s.flush()).toBe('no server');
    expect(calls).toBe(6);
    expect(s.signalsSent).toBe(0);
    s.stop();
  });

  test('demand held through an outage merges with later seals and is delivered once the server answers', async () => {
    vi.useFakeTimers();
    let up = false;
    const sent: Demand[][] = [];
    const s = new DemandSender(
      async (ds) => {
        if (!up) throw new Error('Failed to connect before the deadline');
        sent.push(ds);
      },
      // No spacing: the redelivery timer alone decides when it goes.
      { attempts: 2, redeliverMs: 20, minIntervalMs: 0, sleep: async () => undefined },
    );
    s.offer(d('s0', 1));
    const flushed = s.flush();
    await vi.advanceTimersByTimeAsync(0); // the first round (its retry sleep is injected)
    expect(await flushed).toBe('Failed to connect before the deadline');
    s.offer(d('s0', 2)); // held: an offer does not retry before redeliverMs
    s.offer(d('s1', 7));
    up = true;
    await vi.advanceTimersByTimeAsync(19);
    expect(sent).toEqual([]);
    // The redelivery timer sends it without any further offer or flush (from the event
    // loop's next turn, which the fake clock puts 1 ms later).
    await vi.advanceTimersByTimeAsync(2);
    expect(sent).toEqual([[d('s0', 2), d('s1', 7)]]);
    expect(await s.flush()).toBeUndefined();
    expect(sent).toEqual([[d('s0', 2), d('s1', 7)]]);
    expect(s.undelivered).toBe(0);
  });

  test('a refused request is reported once and dropped, not held', async () => {
    let calls = 0;
    const s = new DemandSender(
      () => {
        calls++;
        const e = new Error('demands: bad');
        e.name = 'RequestRefusedError';
        return Promise.reject(e);
      },
      { sleep: async () => undefined },
    );
    s.offer(d('s0', 1));
    expect(await s.flush()).toBe('demands: bad');
    expect(calls).toBe(1);
    expect(s.undelivered).toBe(0);
    expect(await s.flush()).toBeUndefined();
  });

  test('a failure that clears is not reported', async () => {
    let calls = 0;
    const s = new DemandSender(
      () => (++calls === 1 ? Promise.reject(new Error('blip')) : Promise.resolve()),
      { sleep: async () => undefined },
    );
    s.offer(d('s0', 5));
    expect(await s.flush()).toBeUndefined();
    expect(calls).toBe(2);
    expect(s.signalsSent).toBe(1);
  });

  test('signals are spaced minIntervalMs apart; seals in between coalesce into the next', async () => {
    vi.useFakeTimers();
    const at: number[] = [];
    const sent: Demand[][] = [];
    const s = new DemandSender(async (ds) => {
      at.push(Date.now());
      sent.push(ds);
    }, { minIntervalMs: 80 });
    s.offer(d('s0', 1));
    await vi.advanceTimersByTimeAsync(5);
    for (let i = 2; i <= 5; i++) s.offer(d('s0', i));
    await vi.advanceTimersByTimeAsync(74); // 79 ms after the first signal
    expect(sent).toEqual([[d('s0', 1)]]); // the second waits out the spacing
    await vi.advanceTimersByTimeAsync(1);
    expect(sent).toEqual([[d('s0', 1)], [d('s0', 5)]]);
    expect(at[1]! - at[0]!).toBe(80);
    expect(await s.flush()).toBeUndefined();
  });

  test('the first signal after a quiet spell goes at once, and flush() does not wait out the spacing', async () => {
    vi.useFakeTimers();
    const sent: Demand[][] = [];
    const s = new DemandSender(async (ds) => void sent.push(ds), { minIntervalMs: 60_000 });
    s.offer(d('s0', 1));
    // Not inside offer (its caller, a seal, returns first), but on the next turn.
    expect(sent).toEqual([]);
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([[d('s0', 1)]]);
    s.offer(d('s0', 2));
    await vi.advanceTimersByTimeAsync(59_999);
    expect(sent.length).toBe(1);
    // The clock stands still from here: flush() must not wait for the spacing left.
    expect(await s.flush()).toBeUndefined();
    expect(sent).toEqual([[d('s0', 1)], [d('s0', 2)]]);
    s.stop();
  });
});
