// 32-bit hashes shared by key routing, deduplication and the policy core's phases: pure,
// the same on every process and platform (routing and workflow replay depend on it).

export const FNV_OFFSET = 0x811c9dc5;
export const FNV_PRIME = 0x01000193;

/** FNV-1a over the UTF-16 code units of `text`, continuing from state `h`. */
export function fnv(h: number, text: string): number {
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h;
}

/** murmur3's 32-bit finaliser: spreads nearby inputs over all 32 bits (routing, dedup tables). */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
