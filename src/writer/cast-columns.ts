import { arrow, type ArrowTable, type DataType, type Field, type Schema } from '../storage/arrow';
import { cells, tableOf, vectorOf } from '../storage/arrow-columns';
import { readTableSchema } from '../storage/table-schema';
import type { TableFiles } from '../storage/table-files';
import { SEQ_COLUMN } from '../messages/names';
import { RowsRejectedError } from './errors';

// Writers' columns are cast to the table's schema (fixed by its first seal) when no
// value can change: a dictionary-encoded string column (what arrow-js tableFromArrays
// makes of strings) to plain strings, Int32 to Int64, Float32 to Float64, and so on.
// Anything else is refused naming the column and both types, before anything is sealed.

const isInt = (t: DataType): t is DataType & { isSigned: boolean; bitWidth: number } => arrow.DataType.isInt(t);
const isString = (t: DataType): boolean => arrow.DataType.isUtf8(t) || arrow.DataType.isLargeUtf8(t);
const isBinary = (t: DataType): boolean => arrow.DataType.isBinary(t) || arrow.DataType.isLargeBinary(t);
/** Integer bits a float holds exactly (its significand): half 11, single 24, double 53. */
const floatBits = (t: DataType): number => [11, 24, 53][(t as DataType & { precision: number }).precision] ?? 0;

/** True when every value of type `from` is a value of type `to`. */
export function castsLosslessly(from: DataType, to: DataType): boolean {
  if (String(from) === String(to)) return true;
  if (arrow.DataType.isDictionary(from)) return castsLosslessly(from.dictionary, to);
  if (isInt(from) && isInt(to)) {
    if (to.isSigned) return from.isSigned ? to.bitWidth >= from.bitWidth : to.bitWidth > from.bitWidth;
    return !from.isSigned && to.bitWidth >= from.bitWidth;
  }
  if (isInt(from) && arrow.DataType.isFloat(to)) return floatBits(to) >= from.bitWidth - (from.isSigned ? 1 : 0);
  if (arrow.DataType.isFloat(from) && arrow.DataType.isFloat(to)) return floatBits(to) >= floatBits(from);
  return (isString(from) && isString(to)) || (isBinary(from) && isBinary(to));
}

/** How a cell of a castable column becomes a cell of `to` (64-bit integers are bigint in arrow-js). */
function converter(to: DataType): (v: unknown) => unknown {
  if (isInt(to)) return to.bitWidth === 64 ? (v) => BigInt(v as number | bigint) : (v) => Number(v);
  if (arrow.DataType.isFloat(to)) return (v) => Number(v);
  return (v) => v;
}

/** The type a column keeps when the table has no schema yet: dictionaries are an encoding, not a type. */
const decoded = (t: DataType): DataType => (arrow.DataType.isDictionary(t) ? decoded(t.dictionary) : t);

/**
 * `table` with its columns cast to `target` (the table's schema, `_seq` ignored), or
 * only its dictionaries decoded when the table has no schema yet. Throws
 * RowsRejectedError naming the column and both types when a cast could lose values.
 */
export function castToSchema(table: ArrowTable, target: Schema | null): ArrowTable {
  const fields = table.schema.fields.filter((f) => f.name !== SEQ_COLUMN);
  const wanted = new Map((target?.fields ?? []).filter((f) => f.name !== SEQ_COLUMN).map((f) => [f.name, f]));
  if (target) {
    const have = new Set(fields.map((f) => f.name));
    const missing = [...wanted.keys()].filter((n) => !have.has(n));
    if (missing.length) throw new RowsRejectedError(`column ${missing.join(', ')} of the table is missing from the rows`);
    const extra = fields.filter((f) => !wanted.has(f.name)).map((f) => f.name);
    if (extra.length) throw new RowsRejectedError(`column ${extra.join(', ')} is not a column of the table (columns: ${[...wanted.keys()].join(', ')})`);
  }
  if (fields.length === table.schema.fields.length && fields.every((f) => String(f.type) === String(wanted.get(f.name)?.type ?? decoded(f.type)))) {
    return table; // nothing to cast: keep the caller's batches as they are
  }
  const outFields: Field[] = [];
  const columns = fields.map((f) => {
    const to = wanted.get(f.name)?.type ?? decoded(f.type);
    const column = table.getChild(f.name)!;
    outFields.push(new arrow.Field(f.name, to, f.nullable, f.metadata));
    if (String(f.type) === String(to)) return column;
    if (!castsLosslessly(f.type, to)) {
      throw new RowsRejectedError(`column ${f.name}: ${String(f.type)} does not cast losslessly to the table's ${String(to)}`);
    }
    return vectorOf(cells(column, undefined, converter(to)), to);
  });
  return tableOf(outFields, columns);
}

/** castToSchema against the schema the table's first seal fixed. */
export async function castForTable(table: TableFiles, rows: ArrowTable): Promise<ArrowTable> {
  return castToSchema(rows, await readTableSchema(table));
}
