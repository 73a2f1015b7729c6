import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { Runtime } from '@temporalio/worker';
import * as msg from '../../workflows/messages';
import { workflowIdForTable } from '../messages/names';
import { markTold, sweep, type SweepSignal, type SweepState } from '../policy/store-sweep';
import { joinLoc } from '../storage/location';
import { storageAt } from '../storage/open-storage';
import { METRICS } from './metric-names';
import { liveRecords } from './registry';
import { StoreWatermarks } from './store-watermarks';

// Runs the fleet's store sweep (src/policy/store-sweep.ts says what it decides) beside a
// worker: every `everySecs`, the first live worker of the task queue by identity (the
// registry under <root>/_workers) reads every table's shard watermarks and signals the
// tables whose quiet shards hold seals nobody told them of. The others skip that round,
// so the fleet reads the store once per period however many workers it has; two workers
// that both think they are first for a moment send a signal twice, which is a no-op.
// What the sweeps know is kept in the storage root, so another worker takes over
// where this one stopped. The tables' own scans back this off to snapshotMaxIntervalSecs.

export interface StoreSweeperOptions {
  dataRoot: string;
  taskQueue: string;
  identity: string;
  everySecs: number;
  /** The client the signals go through; made on the first sweep that has one to send. */
  client: () => Promise<Client>;
  log?: (line: string) => void;
}

export const sweepStateFile = (root: string, taskQueue: string): string => joinLoc(joinLoc(root, '_sweep'), `${taskQueue.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);

async function readState(root: string, file: string): Promise<SweepState> {
  const bytes = await storageAt(root).read(file);
  if (bytes === null) return {};
  try {
    return JSON.parse(bytes.toString('utf8')) as SweepState;
  } catch {
    return {}; // torn (it is not fsynced): the next sweeps tell quiet shards once more
  }
}

/** One sweep; returns the signals it delivered. */
export async function sweepOnce(opts: StoreSweeperOptions, watermarks = new StoreWatermarks(opts.dataRoot)): Promise<SweepSignal[]> {
  const file = sweepStateFile(opts.dataRoot, opts.taskQueue);
  const prev = await readState(opts.dataRoot, file);
  const { next, signals } = sweep(prev, await watermarks.read());
  const delivered: SweepSignal[] = [];
  if (signals.length > 0) {
    const client = await opts.client();
    for (const s of signals) {
      const demands = s.shards.map((x) => ({ shard: x.shard, sealedThroughSeq: x.sealedThroughSeq, revision: x.sealedThroughSeq }));
      try {
        await client.workflow.getHandle(workflowIdForTable(s.table)).signal(msg.demands, demands);
        delivered.push(s);
        markTold(next, s);
      } catch (e) {
        // No workflow: the table reads the store when one starts. Anything else: told next sweep.
        if (e instanceof WorkflowNotFoundError) markTold(next, s);
        else opts.log?.(`store sweep: ${s.table} not told (${(e as Error).message.split('\n')[0]}); next sweep tries again`);
      }
    }
  }
  const store = storageAt(opts.dataRoot);
  await store.ensureDir(joinLoc(opts.dataRoot, '_sweep'));
  await store.put(file, JSON.stringify(next), { durable: false });
  return delivered;
}

/** Whether this worker sweeps this round: the first live one of its task queue by identity. */
async function isSweeper(opts: StoreSweeperOptions): Promise<boolean> {
  const live = (await liveRecords(opts.dataRoot)).filter((r) => r.taskQueue === opts.taskQueue);
  return live[0]?.identity === opts.identity;
}

/** Sweeps every `everySecs` until stopped; counts what it told on the runtime's metrics endpoint. */
export function startStoreSweeper(opts: StoreSweeperOptions): { stop(): Promise<void> } {
  const told = Runtime.instance().metricMeter.createCounter(METRICS.sweepTold, 'signals', 'demand signals the store sweep sent for seals nobody had signalled');
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  // Kept between rounds: what has not changed since is not read again.
  const watermarks = new StoreWatermarks(opts.dataRoot);
  const round = async () => {
    try {
      if (!(await isSweeper(opts))) return;
      for (const s of await sweepOnce(opts, watermarks)) {
        told.add(1, { table: s.table });
        opts.log?.(`store sweep: ${s.table} sealed through ${s.shards.map((x) => `${x.shard}@${x.sealedThroughSeq}`).join(', ')} and quiet; told the table`);
      }
    } catch (e) {
      opts.log?.(`store sweep failed: ${(e as Error).message.split('\n')[0]}; next in ${opts.everySecs} s`);
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = round().finally(schedule);
    }, opts.everySecs * 1000);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
