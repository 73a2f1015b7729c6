import { readIpcFile, type ArrowTable } from '../storage/arrow';
import { generateRows, RowsRejectedError, splitByShard, type WriteGenerationResult } from '../writer';
import { castForTable } from '../writer/cast-columns';
import { foreignKey } from '../writer/route-rows';
import { TableWriter } from '../client/table-writer';
import { int, str, type Parsed } from './args';
import { UsageError } from '../messages/errors';
import { readCheckedConfig } from './context';
import { tableArg, withTables } from './operator-commands';
import { progress } from './progress';

// `turnstile write NAME (--shard S --rows N [--keys A..B] | [--shard S] --file F.arrow)`:
// seals generations, prints each seq, honours write pressure. Without --shard the
// file's rows are routed to their shards, one generation each. Every problem with the
// input (flags, file, column types, keys) exits 2 before anything is sealed.

function keyRange(text: string | undefined, rows: number): [number, number] {
  if (text === undefined) return [0, Math.max(0, rows * 4 - 1)];
  const m = /^(\d+)\.\.(\d+)$/.exec(text);
  if (!m || Number(m[1]) > Number(m[2])) throw new UsageError(`--keys: ${JSON.stringify(text)} is not a range A..B of integers with A <= B`);
  return [Number(m[1]), Number(m[2])];
}

/** The file's rows; a missing, unreadable or non-Arrow file is bad input. */
async function readRowsFile(file: string): Promise<ArrowTable> {
  try {
    return await readIpcFile(file, { checksum: 'optional' });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    // "ENOENT: no such file or directory, open 'F'" -> "cannot read F: no such file or directory"
    const why = err.message.split('\n')[0]!.replace(/^[A-Z]+: /, '').replace(/, \w+( '.*')?$/, '');
    throw new UsageError(err.code ? `--file: cannot read ${file}: ${why}` : `--file: ${why}`);
  }
}

/** Runs `fn`; rows the writer refuses (types, keys) are bad input of --file. */
async function refusedAsUsage<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw e instanceof RowsRejectedError ? new UsageError(`--file: ${e.message}`) : e;
  }
}

function report(name: string, shard: string, r: WriteGenerationResult): void {
  console.log(`sealed ${name}/${shard} seq ${r.seq} (${r.rows} rows${r.delayedMs ? `, delayed ${r.delayedMs} ms by write pressure` : ''})`);
}

/** How long `write` waits for its demand to reach an unreachable cluster before leaving it to the snapshot. */
const DEMAND_WAIT_MS = 10_000;

/** The demand of every seal goes out in the background; wait for it (and a pressure query in flight) before exiting. */
async function flushDemand(writer: TableWriter): Promise<void> {
  const { signalError } = await writer.close(DEMAND_WAIT_MS);
  if (signalError) console.error(`warning: demand signal failed (${signalError}); the table's periodic snapshot will pick the generation up`);
}

export async function write(p: Parsed): Promise<void> {
  const name = tableArg(p);
  const shard = str(p, 'shard');
  const file = str(p, 'file');
  if ((file === undefined) === (p.flags.rows === undefined)) throw new UsageError('write: give exactly one of --rows N or --file F.arrow');
  if (file === undefined && shard === undefined) throw new UsageError('--shard: required with --rows (a shard of the table, e.g. s0); rows of a --file are routed without it');
  const count = file === undefined ? int(p, 'rows', 1, 10_000_000) : 0;
  const keys = keyRange(str(p, 'keys'), count);
  const seed = int(p, 'seed', 0, 2 ** 31, Date.now() % 2 ** 31);
  const config = await readCheckedConfig();
  const rowsOfFile = file === undefined ? null : await readRowsFile(file);
  await withTables(async (tables) => {
    const writer = await TableWriter.open(tables, config.dataRoot, name).catch((e: Error) => {
      throw new UsageError(e.message);
    });
    const { shards, key } = writer.meta;
    if (shard !== undefined && !shards.includes(shard)) {
      throw new UsageError(`--shard: ${JSON.stringify(shard)} is not a shard of ${name}; accepted: ${shards.join(', ')}`);
    }
    await writer.refreshPressure();
    if (writer.unreachable) console.error(`warning: Temporal unreachable (${writer.unreachable}); sealing without the table's current write pressure`);
    if (rowsOfFile && shard === undefined) {
      await refusedAsUsage(() => writer.writeRouted(rowsOfFile, (r) => report(name, r.shard, r)));
      await flushDemand(writer);
      return;
    }
    let rows: ArrowTable | ReturnType<typeof generateRows>;
    const shown = progress();
    if (rowsOfFile) {
      const cast = await refusedAsUsage(() => castForTable(writer.table, rowsOfFile));
      const foreign = foreignKey(await refusedAsUsage(() => splitByShard(cast, key, shards)), key, shard!);
      if (foreign) {
        throw new UsageError(`key ${String(foreign.key)} belongs to shard ${foreign.owner}, not ${shard} (keys are routed with shardOfKey; without --shard each row goes to its own shard)`);
      }
      rows = cast;
    } else {
      shown.show(`generating ${count} rows for ${name}/${shard}`);
      try {
        rows = generateRows({ keys, count, shard: shard!, shards, seed });
      } catch (e) {
        throw new UsageError(`--rows: ${(e as Error).message}`);
      }
    }
    shown.show(`sealing ${rowsOfFile ? rowsOfFile.numRows : count} rows into ${name}/${shard}`);
    const r = await writer.write(shard!, rows).finally(() => shown.done());
    report(name, shard!, r);
    await flushDemand(writer);
    // Lazy: the seal needs no server, so an outage of the cluster does not stop writes.
  }, { lazy: true });
}
