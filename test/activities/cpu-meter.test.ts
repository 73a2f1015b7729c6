import { describe, expect, it } from 'vitest';
import { CpuMeter } from '../../activities/cpu-meter';
import { CostMeter } from '../../activities/unit-cost';

// The CPU meter with a CPU source the test advances by hand (µs).
function meter() {
  let cpuUs = 0;
  return { m: new CpuMeter(() => cpuUs), spend: (us: number) => void (cpuUs += us) };
}

describe('CpuMeter', () => {
  it('gives an activity running alone all the CPU the process spent meanwhile', () => {
    const { m, spend } = meter();
    spend(5_000); // before it started: not its
    const a = m.share();
    a.enter();
    spend(3_000);
    a.leave();
    spend(7_000); // after it stopped: not its
    expect(a.ms()).toBe(3);
  });

  it('splits each interval equally among the activities running throughout it', () => {
    const { m, spend } = meter();
    const a = m.share();
    const b = m.share();
    const c = m.share();
    a.enter();
    spend(1_000); // a alone: a 1
    b.enter();
    spend(2_000); // a, b: 1 each
    c.enter();
    spend(3_000); // a, b, c: 1 each
    a.leave();
    spend(4_000); // b, c: 2 each
    b.leave();
    spend(500); // c alone
    c.leave();
    expect([a.ms(), b.ms(), c.ms()]).toEqual([3, 4, 3.5]);
    // Nothing is lost or counted twice: the shares add up to what was spent while any ran.
    expect(a.ms() + b.ms() + c.ms()).toBe(10.5);
  });

  it('a share that leaves and enters again accumulates, without the time it was out', () => {
    const { m, spend } = meter();
    const a = m.share();
    const b = m.share();
    b.enter();
    a.enter();
    spend(2_000); // 1 each
    a.leave(); // a waits (for admission, say)
    spend(6_000); // b alone
    a.enter();
    spend(4_000); // 2 each
    a.leave();
    b.leave();
    expect(a.ms()).toBe(3);
    expect(b.ms()).toBe(9);
  });

  it('reads a running share so far without changing the split', () => {
    const { m, spend } = meter();
    const a = m.share();
    const b = m.share();
    a.enter();
    b.enter();
    spend(2_000);
    expect(a.ms()).toBe(1);
    spend(2_000);
    a.leave();
    b.leave();
    expect([a.ms(), b.ms()]).toEqual([2, 2]);
  });

  it('entering or leaving twice changes nothing', () => {
    const { m, spend } = meter();
    const a = m.share();
    const b = m.share();
    a.enter();
    a.enter();
    b.enter();
    spend(2_000);
    b.leave();
    b.leave();
    spend(1_000);
    a.leave();
    expect(m.running).toBe(0);
    expect([a.ms(), b.ms()]).toEqual([2, 1]);
  });

  it('CostMeter.during counts concurrent activities as sharing, and leaves when its work throws', async () => {
    const { m, spend } = meter();
    const one = new CostMeter(m);
    const two = new CostMeter(m);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = one.during(async () => {
      spend(1_000); // alone
      await gate;
      spend(0);
    });
    const second = two.during(async () => {
      spend(4_000); // beside the first: 2 each
      release();
      await Promise.resolve();
    });
    await Promise.all([first, second]);
    await expect(one.during(() => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(m.running).toBe(0);
    expect(one.result().cpuMs).toBe(3);
    expect(two.result().cpuMs).toBe(2);
  });
});
