// Validation of the names that end up in paths and workflow ids. Pure.

const TABLE_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const SHARD_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const COLUMN_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

function check(field: string, value: string, re: RegExp, accepted: string): string {
  if (typeof value !== 'string' || !re.test(value)) {
    throw new Error(`${field}: ${JSON.stringify(value)} is not valid; accepted: ${accepted}`);
  }
  return value;
}

export const validateTableName = (v: string): string =>
  check('table', v, TABLE_NAME, 'lower-case letters, digits, "_" or "-", 1-63 characters, starting with a letter or digit');

export const validateShardName = (v: string): string =>
  check('shard', v, SHARD_NAME, 'lower-case letters, digits, "_" or "-", 1-32 characters');

export const validateColumnName = (v: string): string =>
  check('key', v, COLUMN_NAME, 'a column name: letters, digits or "_", not starting with a digit');

export const workflowIdForTable = (table: string): string => `table/${table}`;

/** Shards of a table created with `--shards N` are s0 .. s(N-1). */
export const shardNames = (count: number): string[] => Array.from({ length: count }, (_, i) => `s${i}`);

/** The column holding a row's generation seq; merges keep the row with the higher one. */
export const SEQ_COLUMN = '_seq';
