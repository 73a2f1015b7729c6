import { arrow, type ArrowTable, type Schema } from '../src/storage/arrow';
import { SEQ_COLUMN } from '../src/messages/names';

// What a generation file must look like to be merged. A failure here is a property of
// the file, not of the attempt, so callers fail non-retryably naming the file.

const describe = (s: Schema): string => s.fields.map((f) => `${f.name}: ${String(f.type)}`).join(', ');

/** Returns a reason the file is invalid, or null. `reference` is the first file's schema. */
export function generationProblem(table: ArrowTable, key: string, seq: number | null, reference: Schema | undefined): string | null {
  const names = table.schema.names as string[];
  if (!names.includes(key)) return `key column ${key} is missing (columns: ${names.join(', ')})`;
  if (!names.includes(SEQ_COLUMN)) return `column ${SEQ_COLUMN} is missing`;
  if (reference) {
    const want = new Map(reference.fields.map((f) => [f.name, String(f.type)]));
    const same = table.schema.fields.length === want.size && table.schema.fields.every((f) => want.get(f.name) === String(f.type));
    if (!same) return `schema {${describe(table.schema)}} differs from the first file's {${describe(reference)}}`;
  }
  const keys = table.getChild(key)!;
  if (keys.nullCount > 0) return `key column ${key} has ${keys.nullCount} null value(s)`;
  const seqs = table.getChild(SEQ_COLUMN)!;
  if (!arrow.DataType.isInt(seqs.type) || seqs.type.bitWidth !== 64) return `column ${SEQ_COLUMN} has type ${String(seqs.type)}, expected Int64`;
  if (seqs.nullCount > 0) return `column ${SEQ_COLUMN} has null values`;
  if (seq !== null) {
    // Compared as Int32 halves: reading a BigInt64Array element allocates a BigInt, and
    // this runs over every row of every generation a merge reads.
    const values = seqs.toArray() as BigInt64Array;
    const halves = new Int32Array(values.buffer, values.byteOffset, values.length * 2);
    const lo = Number(BigInt.asIntN(32, BigInt(seq)));
    const hi = Number(BigInt.asIntN(32, BigInt(seq) >> 32n));
    for (let i = 0; i < values.length; i++) {
      if (halves[2 * i] !== lo || halves[2 * i + 1] !== hi) return `row ${i} has ${SEQ_COLUMN} ${values[i]}, expected ${seq} (the file's seq)`;
    }
  }
  return null;
}
