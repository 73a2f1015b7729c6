import { generateRows } from '../../src/writer';
import type { TableWriter } from '../../src/client/table-writer';
import { newestPerKey } from './lance-read';
import { sleep } from '../../src/util/sleep';

// A writer load for integration tests: seals generations round-robin over the table's
// shards with overlapping key ranges and remembers every row, so the final table can be
// compared with the "newest seq wins" model.

export class Load {
  readonly written = new Map<string, { seq: number; rows: Record<string, unknown>[] }[]>();
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly writer: TableWriter,
    private readonly opts: { rowsPerGeneration: number; keySpan: number; pauseMs: number },
  ) {}

  async writeOne(shard: string): Promise<number> {
    const list = this.written.get(shard) ?? [];
    const g = list.length;
    const start = (g * this.opts.rowsPerGeneration) % this.opts.keySpan;
    const rows = generateRows({
      keys: [start, start + this.opts.rowsPerGeneration * this.writer.meta.shards.length * 2],
      count: this.opts.rowsPerGeneration,
      shard,
      shards: this.writer.meta.shards,
      seed: g * 31 + shard.length,
    });
    const r = await this.writer.write(shard, rows);
    // Sealed is sealed: the model has it even when the demand signal failed.
    list.push({ seq: r.seq, rows });
    this.written.set(shard, list);
    return r.seq;
  }

  /** Writes until stop(); may be started again after a stop (the model carries on). */
  start(shards: string[] = this.writer.meta.shards): void {
    this.stopped = false;
    this.loop = (async () => {
      while (!this.stopped) {
        for (const s of shards) await this.writeOne(s);
        await sleep(this.opts.pauseMs);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    const { signalError } = await this.writer.flush();
    if (signalError) throw new Error(`demand signal failed: ${signalError}`);
  }

  sealedThrough(shard: string): number {
    return this.written.get(shard)?.at(-1)?.seq ?? 0;
  }

  /** Keys are routed to one shard, so the per-shard models never overlap. */
  model(): Map<string, Record<string, unknown>> {
    const all = new Map<string, Record<string, unknown>>();
    for (const gens of this.written.values()) for (const [k, v] of newestPerKey(gens)) all.set(k, v);
    return all;
  }
}
