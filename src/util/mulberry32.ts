// A seeded PRNG shared by the simulator and the test/demo row generator: the same seed
// gives the same sequence, so simulations replay and generated data is reproducible.

export type Rng = () => number;

/** mulberry32: small, fast, good enough for scheduling noise and test data. */
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
