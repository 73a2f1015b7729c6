import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTableMeta } from '../../src/storage/generation-store';
import { generateRows } from '../../src/writer';
import { TableWriter, workflowArgsFor } from '../../src/client/table-writer';
import type { CommitResult } from '../../activities/contract';
import { eventually, startHarness, uniqueName, type Harness } from '../support/harness';
import { activityRuns, historyEvents } from '../support/history';
import { firstPhase } from '../../src/policy/phase';
import { PERIODIC_KINDS } from '../../src/policy/units';
import { sleep } from '../../src/util/sleep';

// What a small seal costs the table's history (bench/README.md, "Many tables"): a direct
// merge's turn lasts ~100 ms, so it is not published as a search attribute unless a
// later activation still sees it holding the turn, and the snapshot the demand would
// pull in waits for that commit's scan (src/policy/idle.ts, settlePullIn).

let h: Harness;
let releaseCommit: (() => void) | null = null;
let frozen: (() => void) | null = null;
beforeAll(async () => {
  h = await startHarness({
    name: 'seal-cost',
    deps: {
      faults: {
        // The commit of the generation sealed while `frozen` is set waits to be released.
        freezeProgress: (pt) => {
          if (pt.activity !== 'commitMerge' || pt.phase !== 'commit' || frozen === null) return;
          const reached = frozen;
          frozen = null;
          return new Promise<void>((resolve) => {
            releaseCommit = resolve;
            reached();
          });
        },
      },
    },
  });
});
afterAll(async () => h?.close());

const mergedThrough = async (table: string): Promise<number> => (await h.tables.status(table)).shards[0]?.mergedThroughSeq ?? 0;

async function listedWithHolder(table: string, holder: string): Promise<boolean> {
  for await (const wf of h.client.workflow.list({ query: `TurnstileTable = '${table}' AND TurnstileTurnHolder = '${holder}'` })) if (wf.workflowId === `table/${table}`) return true;
  return false;
}

test('small seals merge directly and upsert no search attributes; a direct turn a later activation still sees is published', async () => {
  // A name whose optimize, index and gc first fall due late in their first period
  // (src/policy/phase.ts): with an early phase (under 1% of names) optimize falls due
  // within the test and plans beside the commits counted below.
  let table = uniqueName('cost');
  while (PERIODIC_KINDS.some((k) => firstPhase(table, k) < 0.5)) table = uniqueName('cost');
  await createTableMeta(h.dataRoot, { name: table, key: 'id', shards: ['s0'], indices: [] });
  const writer = await TableWriter.open(h.tables, h.dataRoot, table);
  const seal = async (g: number): Promise<number> => (await writer.write('s0', generateRows({ keys: [g * 10, g * 10 + 49], shard: 's0', shards: ['s0'], seed: g }))).seq;

  // Steady state: each seal merged (read through the state query: no history events) before the next.
  for (let g = 0; g < 4; g++) {
    const seq = await seal(g);
    await eventually(async () => (await mergedThrough(table)) >= seq, `seq ${seq} merged`);
    // The run's first snapshot (started with it) done before the steady seals: while a
    // snapshot runs the table's timer waits for it, so a commit does not move the timer
    // and a seal costs two events fewer than counted below (a loaded CI run saw 10).
    if (g === 0) await eventually(async () => !(await h.tables.status(table)).snapshot.running, 'the first snapshot done');
  }
  const handle = h.tables.handle(table);
  const runs = (await activityRuns(handle)).filter((r) => r.type !== 'snapshot');
  expect(runs.map((r) => r.type)).toEqual(['commitMerge', 'commitMerge', 'commitMerge', 'commitMerge']);
  // The first seal's demand may come in the run's first activation, which publishes
  // everything (the turn it grants included); from the second commit on, nothing.
  const secondCommitClosed = runs[1]!.closedEventId!;
  const upserts = (await historyEvents(handle, 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES')).filter((e) => Number(e.eventId) > secondCommitClosed);
  expect(upserts).toEqual([]);
  // No patch gates (runs are pinned to their build): no marker, no TemporalChangeVersion upsert.
  expect(await historyEvents(handle, 'MARKER_RECORDED')).toEqual([]);
  const versionUpserts = (await historyEvents(handle, 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES')).filter((e) => 'TemporalChangeVersion' in (e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}));
  expect(versionUpserts).toEqual([]);
  // One steady seal, signal to signal: the signal, two workflow tasks (3 each) and the
  // commit (scheduled, started, completed): 10. The commit's scan moves the next
  // snapshot later, which leaves the armed timer as it is (workflows/alarm.ts).
  const signals = await historyEvents(handle, 'WORKFLOW_EXECUTION_SIGNALED');
  expect(signals.length).toBe(4);
  expect(Number(signals[3]!.eventId) - Number(signals[2]!.eventId)).toBe(10);

  // A commit that lasts: the next activation (another seal's demand) publishes its turn.
  const reached = new Promise<void>((resolve) => (frozen = resolve));
  const held = await seal(4);
  await reached;
  expect(await listedWithHolder(table, 'merge/s0')).toBe(false);
  const next = await seal(5);
  await eventually(() => listedWithHolder(table, 'merge/s0'), 'the held turn listed by TurnstileTurnHolder');
  releaseCommit!();
  await eventually(async () => (await mergedThrough(table)) >= next, `seq ${held}-${next} merged`);
  await writer.close();
});

/** The TurnstileTurnHolder values the run's search-attribute upserts set, in order. */
async function publishedHolders(handle: ReturnType<Harness['tables']['handle']>): Promise<{ eventId: number; holder: string | null }[]> {
  const out: { eventId: number; holder: string | null }[] = [];
  for (const e of await historyEvents(handle, 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES')) {
    const p = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.TurnstileTurnHolder;
    if (!p) continue;
    const v = p.data && p.data.length ? (JSON.parse(Buffer.from(p.data).toString('utf8')) as unknown) : null;
    out.push({ eventId: Number(e.eventId), holder: Array.isArray(v) ? ((v[0] as string | undefined) ?? null) : (v as string | null) });
  }
  return out;
}

test('a maintenance turn is published unless the last commit of its kind on the table took under a second', async () => {
  const table = uniqueName('brief');
  await createTableMeta(h.dataRoot, { name: table, key: 'id', shards: ['s0'], indices: [] });
  const writer = await TableWriter.open(h.tables, h.dataRoot, table);
  const handle = h.tables.handle(table);
  const commitsOf = async () => (await activityRuns(handle)).filter((r) => r.type === 'commitOptimize' && r.closedAtMs !== null);
  // Two small fragments each time, so the plan finds something to compact.
  const twoSealsAndOptimize = async (round: number): Promise<void> => {
    for (let g = 0; g < 2; g++) {
      const seq = (await writer.write('s0', generateRows({ keys: [round * 100 + g * 10, round * 100 + g * 10 + 9], shard: 's0', shards: ['s0'], seed: round * 10 + g }))).seq;
      await eventually(async () => (await mergedThrough(table)) >= seq, `seq ${seq} merged`);
    }
    await h.tables.bump(table, { kind: 'optimize', reason: 'test' });
    await eventually(async () => (await commitsOf()).length > round, `optimize commit ${round + 1}`);
  };
  await twoSealsAndOptimize(0);
  await twoSealsAndOptimize(1);
  const [first, second] = await commitsOf();
  const holders = await publishedHolders(handle);
  // The first optimize of the table has nothing to go by: its turn is published.
  expect(holders.filter((x) => x.holder === 'optimize' && x.eventId < first!.closedEventId!).length).toBe(1);
  const firstTookMs = first!.closedAtMs! - first!.decidedAtMs;
  const secondPublished = holders.some((x) => x.holder === 'optimize' && x.eventId > first!.closedEventId! && x.eventId <= second!.closedEventId!);
  // The second goes by the first (its turn's length as the workflow saw it, give or take a task).
  if (firstTookMs < 900) expect(secondPublished).toBe(false);
  else if (firstTookMs > 1100) expect(secondPublished).toBe(true);
  await writer.close();
});

test("a small written table's optimize and gc ride its merges from their first run, none on its own", async () => {
  const table = uniqueName('ride');
  const meta = await createTableMeta(h.dataRoot, { name: table, key: 'id', shards: ['s0'], indices: [] });
  await h.tables.start({ ...workflowArgsFor(meta), policy: { periodSecs: { optimize: 6, index: 0, gc: 6 } } });
  const writer = await TableWriter.open(h.tables, h.dataRoot, table);
  const handle = h.tables.handle(table);
  // Once the writer stops the table goes quiet, and a kind may then come due with no merge to ride.
  const ownRuns = async (before: number) => (await activityRuns(handle)).filter((r) => r.scheduledAtMs < before && ['planOptimize', 'commitOptimize', 'planGc', 'gc'].includes(r.type)).map((r) => r.type);
  // A writer sealing every 250 ms, merged or not: a merge is then always pending or
  // running, so a kind coming due finds one within its slack (a quarter of its 6 s
  // period) however slowly the merges run on a loaded machine. Waiting for each merge
  // before the next seal left gaps longer than the slack under load.
  let g = 0;
  let lastSeq = 0;
  let writing = true;
  const writing$ = (async () => {
    while (writing) {
      lastSeq = (await writer.write('s0', generateRows({ keys: [g * 10, g * 10 + 9], shard: 's0', shards: ['s0'], seed: g }))).seq;
      g++;
      await sleep(250);
    }
  })();
  // Seals for twice their period and more: they ride the merges' commits, the first
  // runs too (a table this small: src/policy/rides.ts, firstRunBrief).
  const rode = async () => (await activityRuns(handle)).filter((r) => r.type === 'commitMerge' && (r.result as CommitResult | undefined)?.maintained !== undefined);
  await eventually(async () => {
    const kinds = (await rode()).flatMap((r) => Object.keys((r.result as CommitResult).maintained!));
    return kinds.includes('optimize') && kinds.includes('gc');
  }, 'optimize and gc rode a merge', 60_000).finally(() => (writing = false));
  const stoppedAt = Date.now();
  await writing$;
  await eventually(async () => (await mergedThrough(table)) >= lastSeq, `seq ${lastSeq} merged`);
  expect(await ownRuns(stoppedAt)).toEqual([]);
  for (const r of await rode()) {
    const m = (r.result as CommitResult).maintained!;
    for (const run of Object.values(m)) expect(run?.error).toBeUndefined();
  }
  // The table's history has an entry for each ride; the table is compacted.
  const history = await h.tables.history(table);
  expect(history.entries.filter((e) => e.kind === 'optimize' && e.why.startsWith('rode merge/s0')).length).toBeGreaterThan(0);
  expect(history.entries.filter((e) => e.kind === 'gc' && e.why.startsWith('rode merge/s0') && e.outcome === 'committed').length).toBeGreaterThan(0);
  await writer.close();
}, 150_000);
