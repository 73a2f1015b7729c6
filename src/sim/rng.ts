// A seeded PRNG so that a simulation is a pure function of its config: the same seed
// replays the same run, which is what lets fast-check shrink a failing case.

export type Rng = () => number;

/** mulberry32: small, fast, good enough for scheduling noise. */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A fixed value or a uniform [min, max] range, in milliseconds. */
export type Range = number | readonly [number, number];

export function draw(rng: Rng, r: Range): number {
  if (typeof r === 'number') return r;
  const [lo, hi] = r;
  return Math.round(lo + (hi - lo) * rng());
}

export const rangeMax = (r: Range): number => (typeof r === 'number' ? r : r[1]);

export const chance = (rng: Rng, p: number | undefined): boolean => p !== undefined && p > 0 && rng() < p;
