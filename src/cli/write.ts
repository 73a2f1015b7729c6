import { arrow } from '../storage/arrow';
import { readIpcFile } from '../storage/arrow';
import { generateRows } from '../writer';
import { TableWriter } from '../client/table-writer';
import { int, onlyFlags, positional, required, str, UsageError, type Parsed } from './args';
import { readConfig } from './context';
import { withTables } from './operator-commands';

// `turnstile write NAME --shard S (--rows N [--keys A..B] | --file F.arrow)`: seals one
// generation, prints its seq, honours write pressure.

function keyRange(text: string | undefined, rows: number): [number, number] {
  if (text === undefined) return [0, Math.max(0, rows * 4 - 1)];
  const m = /^(\d+)\.\.(\d+)$/.exec(text);
  if (!m || Number(m[1]) > Number(m[2])) throw new UsageError(`--keys: ${JSON.stringify(text)} is not a range A..B of integers with A <= B`);
  return [Number(m[1]), Number(m[2])];
}

export async function write(p: Parsed): Promise<void> {
  onlyFlags(p, ['shard', 'rows', 'keys', 'file', 'seed']);
  const name = positional(p, 0, 'NAME');
  const shard = required(p, 'shard', 'a shard of the table, e.g. s0');
  const file = str(p, 'file');
  if ((file === undefined) === (p.flags.rows === undefined)) throw new UsageError('write: give exactly one of --rows N or --file F.arrow');
  const config = readConfig();
  await withTables(async (tables) => {
    const writer = await TableWriter.open(tables, config.dataRoot, name).catch((e: Error) => {
      throw new UsageError(e.message);
    });
    if (!writer.meta.shards.includes(shard)) {
      throw new UsageError(`--shard: ${JSON.stringify(shard)} is not a shard of ${name}; accepted: ${writer.meta.shards.join(', ')}`);
    }
    let rows;
    if (file) rows = await readIpcFile(file);
    else {
      const count = int(p, 'rows', 1, 10_000_000);
      rows = generateRows({ keys: keyRange(str(p, 'keys'), count), count, shard, shards: writer.meta.shards, seed: int(p, 'seed', 0, 2 ** 31, Date.now() % 2 ** 31) });
    }
    await writer.refreshPressure();
    const r = await writer.write(shard, rows);
    const n = rows instanceof arrow.Table ? rows.numRows : rows.length;
    console.log(`sealed ${name}/${shard} seq ${r.seq} (${n} rows${r.delayedMs ? `, delayed ${r.delayedMs} ms by write pressure` : ''})`);
    const { signalError } = await writer.flush();
    if (signalError) console.error(`warning: demand signal failed (${signalError}); the table's periodic snapshot will pick the generation up`);
  });
}
