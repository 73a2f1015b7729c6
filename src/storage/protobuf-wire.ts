// Protobuf's wire format, read without a schema: Turnstile reads a handful of fields of
// Lance's manifests and transactions (lance-commit-bytes.ts) and nothing else, so a
// generated decoder of Lance's whole proto tree would be a dependency on all of it.
// Varints are BigInt: some Lance fields (a deletion file's id) use all 64 bits.

export type WireValue = bigint | Uint8Array;

/** Every field of one message by number, in order of appearance; unknown wire types throw. */
export function readFields(buf: Uint8Array): Map<number, WireValue[]> {
  const out = new Map<number, WireValue[]>();
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (i >= buf.length) throw new Error('protobuf: truncated varint');
      const b = buf[i++] as number;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
  };
  const take = (n: number): Uint8Array => {
    if (i + n > buf.length) throw new Error('protobuf: field runs past the end');
    const s = buf.subarray(i, i + n);
    i += n;
    return s;
  };
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    let value: WireValue;
    switch (key & 7) {
      case 0:
        value = varint();
        break;
      case 1:
        value = Buffer.from(take(8)).readBigUInt64LE();
        break;
      case 2:
        value = take(Number(varint()));
        break;
      case 5:
        value = BigInt(Buffer.from(take(4)).readUInt32LE());
        break;
      default:
        throw new Error(`protobuf: wire type ${key & 7} of field ${no} is not supported`);
    }
    const list = out.get(no);
    if (list) list.push(value);
    else out.set(no, [value]);
  }
  return out;
}

/** The messages (length-delimited values) of field `no`. */
export const messages = (m: Map<number, WireValue[]>, no: number): Map<number, WireValue[]>[] =>
  (m.get(no) ?? []).filter((v): v is Uint8Array => v instanceof Uint8Array).map(readFields);

/** The last value of a varint field, or undefined. */
export function uint(m: Map<number, WireValue[]>, no: number): bigint | undefined {
  const v = m.get(no)?.at(-1);
  return typeof v === 'bigint' ? v : undefined;
}

/** The last value of a string field, or undefined. */
export function str(m: Map<number, WireValue[]>, no: number): string | undefined {
  const v = m.get(no)?.at(-1);
  return v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : undefined;
}

/** The last value of a bytes field, or undefined. */
export function bytes(m: Map<number, WireValue[]>, no: number): Uint8Array | undefined {
  const v = m.get(no)?.at(-1);
  return v instanceof Uint8Array ? v : undefined;
}
