import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { testWorkflowBundle } from '../support/workflow-bundle';
import { HISTORIES_DIR, RECORD_DIR, hasCompletedTask } from '../support/record-history';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { tasksMergedOnReplay } from '../support/replay-merges';

// Histories this release's integration tests recorded (TURNSTILE_RECORD_HISTORIES=1)
// are replayed against the current workflow code: a change in command order fails here.
// Only this release's: runs are pinned to the build that started them, so no build
// replays another release's runs (DESIGN.md, "Releases and upgrades").

const files = fs.existsSync(RECORD_DIR) ? fs.readdirSync(RECORD_DIR).filter((f) => f.endsWith('.json')).sort() : [];
const load = (f: string) => historyFromJSON(JSON.parse(fs.readFileSync(path.join(RECORD_DIR, f), 'utf8')));

test("this release's recorded histories are checked in, and no other release's", () => {
  expect(files.length).toBeGreaterThanOrEqual(20);
  expect(fs.readdirSync(HISTORIES_DIR)).toEqual([path.basename(RECORD_DIR)]);
  // The replayer waits forever on a history without a completed task.
  expect(files.filter((f) => !hasCompletedTask(load(f)))).toEqual([]);
});

test('every recorded history replays without nondeterminism', async () => {
  const histories = files.map((f) => ({ workflowId: f.replace(/\.json$/, ''), history: load(f) }));
  const results = Worker.runReplayHistories({ workflowBundle: await testWorkflowBundle(), replayName: 'turnstile-replay' }, histories);
  const failures: string[] = [];
  let replayed = 0;
  for await (const r of results) {
    replayed++;
    if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
  }
  expect(failures).toEqual([]);
  expect(replayed).toBe(files.length);
}, 180_000);

test('the workflow bundle the build wrote (what compiled workers run) replays them', async () => {
  // npm test builds dist/ before the tests (scripts/bootstrap.mjs).
  const code = fs.readFileSync(path.join(PROJECT_ROOT, 'dist', 'workflow-bundle.js'), 'utf8');
  const histories = files.map((f) => ({ workflowId: `prebuilt-${f.replace(/\.json$/, '')}`, history: load(f) }));
  const failures: string[] = [];
  let replayed = 0;
  for await (const r of Worker.runReplayHistories({ workflowBundle: { code }, replayName: 'turnstile-replay-prebuilt' }, histories)) {
    replayed++;
    if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
  }
  expect(failures).toEqual([]);
  expect(replayed).toBe(files.length);
}, 180_000);

test('no recorded run has a task that a replay would merge with the next (each activation replays as it ran)', () => {
  // sdk-core's split of a history into activations (test/support/replay-merges.ts); the
  // shell decides once per activation, so a merged task could change a decision.
  const merged = files.flatMap((f) => tasksMergedOnReplay(load(f)).map((id) => `${f}@${id}`));
  expect(merged).toEqual([]);
});
