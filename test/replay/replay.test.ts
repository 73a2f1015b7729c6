import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { workflowBundle } from '../../src/worker/create-worker';
import { HISTORIES_DIR } from '../support/record-history';
import { PROJECT_ROOT } from '../../src/paths';
import { tasksMergedOnReplay } from '../support/replay-merges';

// Histories recorded from the integration tests (TURNSTILE_RECORD_HISTORIES=1) are
// replayed against the current workflow code: a change in command order fails here.

const files = fs.existsSync(HISTORIES_DIR)
  ? (fs.readdirSync(HISTORIES_DIR, { recursive: true }) as string[]).filter((f) => f.endsWith('.json')).sort()
  : [];

test('recorded histories are checked in', () => {
  expect(files.length).toBeGreaterThanOrEqual(5);
  // Both generations: runs recorded before the named-activity-ids patch and after it.
  expect(new Set(files.map((f) => path.dirname(f))).size).toBeGreaterThanOrEqual(2);
});

test('every recorded history replays without nondeterminism', async () => {
  const histories = files.map((f) => ({ workflowId: f.replace(/\.json$/, ''), history: historyFromJSON(JSON.parse(fs.readFileSync(path.join(HISTORIES_DIR, f), 'utf8'))) }));
  const results = Worker.runReplayHistories({ workflowBundle: await workflowBundle(), replayName: 'turnstile-replay' }, histories);
  const failures: string[] = [];
  let replayed = 0;
  for await (const r of results) {
    replayed++;
    if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
  }
  expect(failures).toEqual([]);
  expect(replayed).toBe(files.length);
}, 180_000);

test('the workflow bundle the build wrote (what compiled workers run) replays the newest recorded histories', async () => {
  // npm test builds dist/ before the tests (scripts/bootstrap.mjs). The newest generation
  // of histories is enough to tell it is today's workflow code; all of them replay above.
  const code = fs.readFileSync(path.join(PROJECT_ROOT, 'dist', 'workflow-bundle.js'), 'utf8');
  const newest = [...new Set(files.map((f) => path.dirname(f)))].sort((a, b) => parseInt(a, 10) - parseInt(b, 10)).at(-1);
  const mine = files.filter((f) => path.dirname(f) === newest);
  expect(mine.length).toBeGreaterThan(5);
  const histories = mine.map((f) => ({ workflowId: `prebuilt-${f.replace(/\.json$/, '')}`, history: historyFromJSON(JSON.parse(fs.readFileSync(path.join(HISTORIES_DIR, f), 'utf8'))) }));
  const failures: string[] = [];
  let replayed = 0;
  for await (const r of Worker.runReplayHistories({ workflowBundle: { code }, replayName: 'turnstile-replay-prebuilt' }, histories)) {
    replayed++;
    if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
  }
  expect(failures).toEqual([]);
  expect(replayed).toBe(mine.length);
}, 180_000);

test('runs with the one patch marker, with an earlier one and from before it replay interleaved in one worker', async () => {
  // workflows/patches.ts keeps a run's answers (which marker it has) in module state: they must stay with their run.
  const gens = [...new Set(files.map((f) => path.dirname(f)))].sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
  // The longest runs of each: past 500 events a leaked answer would change when they continue as new.
  const size = (f: string) => fs.statSync(path.join(HISTORIES_DIR, f)).size;
  const longest = (gen: string | undefined) => files.filter((f) => path.dirname(f) === gen).sort((a, b) => size(b) - size(a)).slice(0, 4);
  const [newest, earlier, before] = [longest(gens.at(-1)), longest(gens.at(-2)), longest(gens.at(-3))];
  for (const g of [newest, earlier, before]) expect(g.length).toBeGreaterThan(1);
  const order = newest.flatMap((f, i) => [f, earlier[i], before[i]].filter((x): x is string => x !== undefined));
  const histories = order.map((f, i) => ({ workflowId: `interleaved-${i}-${f}`, history: historyFromJSON(JSON.parse(fs.readFileSync(path.join(HISTORIES_DIR, f), 'utf8'))) }));
  const failures: string[] = [];
  for await (const r of Worker.runReplayHistories({ workflowBundle: await workflowBundle(), replayName: 'turnstile-replay-interleaved' }, histories)) {
    if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
  }
  expect(failures).toEqual([]);
}, 120_000);

test('no recorded run has a task that a replay would merge with the next (each activation replays as it ran)', () => {
  // sdk-core's split of a history into activations (test/support/replay-merges.ts); the
  // shell decides once per activation, so a merged task could change a decision.
  const merged = files.flatMap((f) => tasksMergedOnReplay(historyFromJSON(JSON.parse(fs.readFileSync(path.join(HISTORIES_DIR, f), 'utf8')))).map((id) => `${f}@${id}`));
  expect(merged).toEqual([]);
});
