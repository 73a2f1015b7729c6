import { arrow, type Vector } from './arrow';
import { keyHasher, ownerOfCodes as importedOwnerOfCodes, shardRouter, type Key, type KeyHasher } from './routing';

// Bound once, as routing.ts binds its imports: through tsx (a writer run as TypeScript)
// every call of an imported function is a getter call on the other module's exports,
// here once per row.
const ownerOfCodes = importedOwnerOfCodes;

// The seal checks that every row of a generation belongs to its shard. Through
// `vector.get(i)` an Int64 key becomes a BigInt and then a string, and that cost 16-18
// ms per 100k rows: half of a large seal. Here the owner is computed from the column's
// buffers: integers from their 32-bit halves, ASCII strings from their bytes. Both give
// exactly the code units shardRouter hashes (the decimal text of the integer, the
// UTF-16 units of the string); anything else takes the generic path.

export interface Misrouted {
  index: number;
  key: Key;
  owner: string;
}

const TWO_32 = 4294967296;

/** The first row of `keys` whose owner is not `shard`, or null. */
export function firstMisrouted(keys: Vector, shards: readonly string[], shard: string): Misrouted | null {
  const ownerOf = shardRouter(shards);
  const hasher = keyHasher(shards);
  const want = shards.indexOf(shard);
  const digits = new Uint16Array(24);
  let base = 0;
  for (const data of keys.data) {
    const found = fastScan(data, hasher, want, digits) ?? genericScan(data, ownerOf, shard);
    if (found >= 0) {
      const key = keys.get(base + found) as Key;
      return { index: base + found, key, owner: ownerOf(key) };
    }
    base += data.length;
  }
  return null;
}

type Data = Vector['data'][number];

/** Index of the first misrouted row of one chunk, -1 if none, or null if the chunk's type has no fast path. */
function fastScan(data: Data, hasher: KeyHasher, want: number, digits: Uint16Array): number | null {
  if (want < 0 || data.nullCount > 0) return null;
  const t = data.type;
  if (arrow.DataType.isInt(t)) {
    const values = data.values as ArrayLike<number> & ArrayBufferView;
    if (t.bitWidth < 64) {
      for (let i = 0; i < data.length; i++) if (ownerOfCodes(hasher, digits, decimalCodes(values[i]!, digits), digits.length) !== want) return i;
      return -1;
    }
    const halves = new Uint32Array(values.buffer, values.byteOffset, data.length * 2);
    for (let i = 0; i < data.length; i++) {
      const lo = halves[2 * i]!;
      const hiBits = halves[2 * i + 1]!;
      const hi = t.isSigned ? hiBits | 0 : hiBits;
      // Beyond ±2^53 a Number would round; those rows go through the generic path.
      if (hi >= 0x200000 || hi < -0x200000) return null;
      if (ownerOfCodes(hasher, digits, decimalCodes(hi * TWO_32 + lo, digits), digits.length) !== want) return i;
    }
    return -1;
  }
  if (arrow.DataType.isUtf8(t)) {
    const offsets = data.valueOffsets as Int32Array;
    const bytes = data.values as Uint8Array;
    // ASCII bytes are the string's UTF-16 code units: copied into `units` as they are checked.
    let units = new Uint16Array(64);
    for (let i = 0; i < data.length; i++) {
      const start = offsets[i]!;
      const end = offsets[i + 1]!;
      if (end - start > units.length) units = new Uint16Array((end - start) * 2);
      for (let b = start; b < end; b++) {
        const c = bytes[b]!;
        if (c >= 0x80) return null;
        units[b - start] = c;
      }
      if (ownerOfCodes(hasher, units, 0, end - start) !== want) return i;
    }
    return -1;
  }
  return null;
}

function genericScan(data: Data, ownerOf: (k: Key) => string, shard: string): number {
  const v = new arrow.Vector([data]);
  for (let i = 0; i < v.length; i++) if (ownerOf(v.get(i) as Key) !== shard) return i;
  return -1;
}

/** The two decimal digits of 0..99 as char codes, "00" to "99". */
const DIGIT_PAIRS = Uint16Array.from({ length: 200 }, (_, i) => 48 + (i % 2 === 0 ? Math.floor(i / 20) : (i >> 1) % 10));

/**
 * Writes the decimal text of safe integer `n` at the end of `out` as char codes; returns
 * where it starts. Two digits per division: the seal checks every key of a generation.
 */
function decimalCodes(n: number, out: Uint16Array): number {
  let v = n < 0 ? -n : n;
  // Least significant digits first, from the end of `out` backwards.
  let at = out.length;
  // Above 2^31 with doubles, then (most keys) in 32-bit integers, which divide faster.
  while (v > 0x7fffffff) {
    const q = Math.floor(v / 100);
    const r = 2 * (v - q * 100);
    out[--at] = DIGIT_PAIRS[r + 1]!;
    out[--at] = DIGIT_PAIRS[r]!;
    v = q;
  }
  let w = v | 0;
  while (w >= 100) {
    const q = (w / 100) | 0;
    const r = 2 * (w - q * 100);
    out[--at] = DIGIT_PAIRS[r + 1]!;
    out[--at] = DIGIT_PAIRS[r]!;
    w = q;
  }
  if (w >= 10) {
    out[--at] = DIGIT_PAIRS[2 * w + 1]!;
    out[--at] = DIGIT_PAIRS[2 * w]!;
  } else out[--at] = 48 + w;
  if (n < 0) out[--at] = 45; // '-'
  return at;
}
