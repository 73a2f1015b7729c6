import * as lancedb from '@lancedb/lancedb';
import type { Config } from '../config/config-schema';
import { createTableMeta, readTableMeta, TableExistsError } from '../storage/generation-store';
import { lanceConnectOptions } from '../storage/lance-table';
import { shardNames } from '../messages/names';
import { generateRows } from '../writer';
import { connectClient } from '../client/connect';
import { TableClient } from '../client/table-client';
import { TableWriter } from '../client/table-writer';
import { sleep } from '../util/sleep';

// `turnstile dev --demo`: a table `demo` with two shards; a few generations with
// overlapping keys are written and their merges are printed as they land.

export async function runDemo(config: Config, signal: AbortSignal, generations = 4): Promise<void> {
  const client = await connectClient(config.temporal);
  const tables = new TableClient(client, config.temporal.taskQueue);
  try {
    const meta = await createTableMeta(config.dataRoot, { name: 'demo', key: 'id', shards: shardNames(2), indices: [] }).catch(async (e) => {
      if (e instanceof TableExistsError) return readTableMeta(config.dataRoot, 'demo');
      throw e;
    });
    console.log(`demo: table demo (key id, shards ${meta.shards.join(', ')}); writing ${generations} generations per shard`);
    const writer = await TableWriter.open(tables, config.dataRoot, 'demo');
    const seen = new Map<string, number>();
    const watch = async () => {
      const s = await tables.state('demo').catch(() => null);
      if (!s) return;
      for (const sh of s.shards) {
        if ((seen.get(sh.shard) ?? 0) < sh.mergedThroughSeq) {
          seen.set(sh.shard, sh.mergedThroughSeq);
          console.log(`demo: merged ${sh.shard} through seq ${sh.mergedThroughSeq} -> table version ${s.version} (backlog ${s.backlog})`);
        }
      }
    };
    for (let g = 0; g < generations && !signal.aborted; g++) {
      for (const shard of meta.shards) {
        // Overlapping key ranges: later generations overwrite earlier rows.
        const rows = generateRows({ keys: [g * 50, g * 50 + 199], count: 80, shard, shards: meta.shards, seed: g + 1 });
        const r = await writer.write(shard, rows);
        console.log(`demo: sealed ${shard} seq ${r.seq} (${rows.length} rows)`);
      }
      await sleep(1500, signal);
      await watch();
    }
    for (let i = 0; i < 20 && !signal.aborted; i++) {
      await watch();
      const s = await tables.state('demo').catch(() => null);
      if (s && s.backlog === 0 && s.shards.every((sh) => sh.mergedThroughSeq > 0)) break;
      await sleep(1000, signal);
    }
    if (signal.aborted) return;
    const db = await lancedb.connect(config.dataRoot, lanceConnectOptions(config.dataRoot));
    const rows = await (await db.openTable('demo')).countRows();
    console.log(`demo: table demo has ${rows} rows (read with @lancedb/lancedb from ${config.dataRoot}); see it in the UI as workflow table/demo`);
  } finally {
    await client.connection.close();
  }
}
