// A seeded PRNG so that a simulation is a pure function of its config: the same seed
// replays the same run, which is what lets fast-check shrink a failing case.

import { mulberry32, type Rng } from '../util/mulberry32';

export { mulberry32, type Rng };

/** A fixed value or a uniform [min, max] range, in milliseconds. */
export type Range = number | readonly [number, number];

export function draw(rng: Rng, r: Range): number {
  if (typeof r === 'number') return r;
  const [lo, hi] = r;
  return Math.round(lo + (hi - lo) * rng());
}

export const rangeMax = (r: Range): number => (typeof r === 'number' ? r : r[1]);

export const chance = (rng: Rng, p: number | undefined): boolean => p !== undefined && p > 0 && rng() < p;
