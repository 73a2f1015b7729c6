import { arrow, encodeIpcFile, readIpcFile, type Schema } from './arrow';
import type { TableFiles } from './table-files';

// The table's column schema, fixed by its first seal (`<meta>/schema.arrow`, an Arrow
// file with no rows). A generation of another shape could never be merged: prepareMerge
// would fail on it and hold the shard. Refusing it at seal time keeps shards mergeable.

const describe = (s: Schema): string => `{${s.fields.map((f) => `${f.name}: ${String(f.type)}`).join(', ')}}`;

function sameColumns(a: Schema, b: Schema): boolean {
  if (a.fields.length !== b.fields.length) return false;
  const types = new Map(a.fields.map((f) => [f.name, String(f.type)]));
  return b.fields.every((f) => types.get(f.name) === String(f.type));
}

/** The schema fixed by the table's first seal, or null before it. */
export async function readTableSchema({ storage, layout }: TableFiles): Promise<Schema | null> {
  try {
    // Optional: schema files written before checksums were embedded have none.
    return (await readIpcFile(layout.schemaFile, { checksum: 'optional', storage })).schema;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Record `schema` as the table's if it has none yet; otherwise refuse a different one. Returns the table's. */
// Once fixed a table's schema never changes: a writer process reads it once, not per seal.
const known = new Map<string, Schema>();

export async function checkTableSchema(files: TableFiles, schema: Schema): Promise<Schema> {
  const file = files.layout.schemaFile;
  let ref = known.get(file) ?? (await readTableSchema(files));
  if (!ref) {
    // Durable and exclusive: the first sealer wins; a concurrent one compares with it.
    await files.storage.putIfAbsent(file, await encodeIpcFile(new arrow.Table(schema)));
    ref = await readTableSchema(files);
    if (!ref) throw new Error(`${file}: vanished right after it was written`);
  }
  known.set(file, ref);
  if (!sameColumns(ref, schema)) {
    throw new Error(`table ${files.name}: rows with columns ${describe(schema)} do not match the table's ${describe(ref)}`);
  }
  return ref;
}
