import { KINDS, type Kind } from '../policy/types';
import { validateTableName } from '../messages/names';
import { int, positional, required, str, type Parsed } from './args';
import { TimedOutError, UsageError } from '../messages/errors';
import { readClient, readConfig, readJsonFile, tableClient } from './context';
import { readStatus } from '../client/read-status';
import { formatStatus } from './format-status';
import { every, progress } from './progress';
import { savePolicyOverride } from '../storage/table-meta';
import type { PolicyOverride } from '../config/policy-schema';
import { withReservations } from '../client/reservations';
import { liveRecords } from '../worker/registry';
import { timedOutLine, type ShardStanding } from './wait-timeout';

// Operator commands: status, bump, pause, resume, policy, wait-merged.

function kindFlag(p: Parsed): Kind | null {
  const k = str(p, 'kind');
  if (k === undefined) return null;
  if (!(KINDS as readonly string[]).includes(k)) throw new UsageError(`--kind: ${JSON.stringify(k)} is not a kind; accepted: ${KINDS.join(', ')}`);
  return k as Kind;
}

export const tableArg = (p: Parsed): string => {
  try {
    return validateTableName(positional(p, 0, 'NAME'));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
};

export async function withTables<T>(fn: (t: Awaited<ReturnType<typeof tableClient>>) => Promise<T>, opts: { lazy?: boolean } = {}): Promise<T> {
  const t = await tableClient(readConfig(), opts);
  try {
    return await fn(t);
  } finally {
    await t.client.connection.close();
  }
}

export async function status(p: Parsed): Promise<void> {
  const name = tableArg(p);
  const config = readConfig();
  const reader = readClient(config);
  const [view, records] = await Promise.all([readStatus(reader, name).finally(() => reader.close()), liveRecords(config.dataRoot)]);
  const s = withReservations(view, records);
  console.log(p.flags.json ? JSON.stringify(s, null, 2) : formatStatus(s));
}

export async function bump(p: Parsed): Promise<void> {
  const name = tableArg(p);
  const kind = kindFlag(p) ?? undefined;
  const unitId = str(p, 'unit');
  if ((kind === undefined) === (unitId === undefined)) throw new UsageError('bump: give exactly one of --kind K or --unit ID');
  const req = {
    kind,
    unitId,
    class: int(p, 'class', 1, 4, 1) as 1 | 2 | 3 | 4,
    reason: required(p, 'reason', 'why, shown in status and the UI'),
    forSecs: int(p, 'for', 1, 604800, 600),
  };
  await withTables((t) => t.bump(name, req));
  console.log(`bumped ${kind ?? unitId} of ${name} to class ${req.class} for ${req.forSecs} s`);
}

export async function pauseOrResume(p: Parsed, action: 'pause' | 'resume'): Promise<void> {
  const name = tableArg(p);
  const kind = kindFlag(p);
  await withTables((t) => t[action](name, { kind }));
  console.log(`${action === 'pause' ? 'paused' : 'resumed'} ${kind ? `kind ${kind} of ` : ''}${name}`);
}

export async function policy(p: Parsed): Promise<void> {
  const name = tableArg(p);
  if (p.flags['dry-run']) {
    const { dryRun, hoursFlag } = await import('./policy-dry-run');
    hoursFlag(p); // a bad --hours is refused before the file is read
    return dryRun(p, name, readJsonFile(required(p, 'set', 'a JSON file with policy keys'), '--set'));
  }
  for (const flag of ['hours', 'json']) if (p.flags[flag] !== undefined) throw new UsageError(`--${flag}: only with --dry-run`);
  const override = readJsonFile(required(p, 'set', 'a JSON file with policy keys'), '--set');
  const { refuseOtherStorageRoot } = await import('../client/storage-root-check');
  // The workflow's update validator checks it (unknown keys, ranges) against the
  // table's current policy and rejects with one line; the workflow keeps running.
  const next = await withTables(async (t) => {
    // table.json keeps the override too: only under the root the table's workers read.
    await refuseOtherStorageRoot(t, readConfig().dataRoot);
    return t.setPolicy(name, override as object).catch((e: Error & { cause?: Error }) => {
      throw new UsageError(`policy: ${(e.cause?.message ?? e.message).split('\n')[0]}`);
    });
  });
  // Accepted: table.json keeps it too, so a workflow started afresh begins with it.
  await savePolicyOverride(readConfig().dataRoot, name, override as PolicyOverride);
  console.log(JSON.stringify(next, null, 2));
}

/** How long the timeout line waits for the table to say where the shard stands. */
const STANDING_QUERY_MS = 5_000;

/** Where the shard stands for the timeout line, or why that is unknown. */
async function standingAtTimeout(t: Awaited<ReturnType<typeof tableClient>>, name: string): Promise<{ standing: ShardStanding | null; unanswered?: string }> {
  const late = new Promise<null>((resolve) => setTimeout(() => resolve(null), STANDING_QUERY_MS).unref());
  try {
    const standing = await Promise.race([t.state(name), late]);
    return standing ? { standing } : { standing: null, unanswered: `the table did not answer its query within ${STANDING_QUERY_MS / 1000} s` };
  } catch (e) {
    return { standing: null, unanswered: `the table's query failed: ${(e as Error).message.split('\n')[0]}` };
  }
}

export async function waitMerged(p: Parsed): Promise<void> {
  const name = tableArg(p);
  const shard = required(p, 'shard', 'a shard name, e.g. s0');
  const seq = int(p, 'seq', 0, Number.MAX_SAFE_INTEGER);
  const timeoutSecs = int(p, 'timeout', 1, 86400, 600);
  const { MergeWaiter } = await import('../client/merge-waiter');
  const shown = progress();
  const r = await withTables(async (t) => {
    const timedOut = Symbol('timed out');
    const timeout = new Promise<typeof timedOut>((resolve) => setTimeout(() => resolve(timedOut), timeoutSecs * 1000).unref());
    // On a terminal: where the shard stands, from the same query writers poll.
    const stop = shown.active
      ? every(1000, async () => {
          const s = await t.state(name);
          const sh = s.shards.find((x) => x.shard === shard);
          shown.show(`waiting for ${name}/${shard} seq ${seq}: merged through ${sh?.mergedThroughSeq ?? '?'}, backlog ${s.backlog}`);
        })
      : () => {};
    try {
      const merged = await Promise.race([new MergeWaiter(t.client).wait(name, shard, seq), timeout]);
      if (merged !== timedOut) return merged;
    } finally {
      stop();
      shown.done();
    }
    const { standing, unanswered } = await standingAtTimeout(t, name);
    throw new TimedOutError(timedOutLine({ table: name, shard, seq, timeoutSecs }, standing, unanswered));
  });
  console.log(`merged ${name}/${shard} seq ${seq} (merged through ${r.mergedThroughSeq}) in table version ${r.version}`);
}
