// The whole suite of `npm test`, in lanes that keep two cores busy. Plain Node.
import { spawn } from 'node:child_process';

/**
 * Files that mostly wait (stall and sticky-queue timeouts, policy periods, writers at a
 * fixed rate, a wait meant to time out) and leave most of a core idle. They run in a lane
 * of their own, one file at a time, beside the two forks of the rest, so their waits
 * overlap work instead of holding a fork. Each alone on 2 cores, wall time / CPU time
 * (about 8 s / 10 s of it start-up): stopped-sticky-worker 108 / 25 s, idle 41 / 19 s,
 * adopted 229 / 141 s, maintenance 49 / 33 s, store-sweep 35 / 23 s, metrics 19 / 15 s,
 * plan-aging 17 / 14 s, stuck-task (the server's retries of a failing task) 38 s of wall.
 * The last four of the list waited about half of their time in a suite run (wall / CPU of
 * the test process and its children there: scheduler 99 / 42 s, sticky-bounce 49 / 21 s,
 * table-shell 36 / 12 s, operator-views 28 / 8 s); without them the main lane ended
 * ~300 s after this one. The cluster tests stay in the main lane: cluster faults alone is
 * 104 / 111 s, but two clusters at once (faults beside upgrade) stretched upgrade from
 * 216 to 375 s.
 */
export const WAIT_LANE = [
  'test/integration/adopted.test.ts',
  'test/integration/stopped-sticky-worker.test.ts',
  'test/integration/idle.test.ts',
  'test/integration/maintenance.test.ts',
  'test/integration/store-sweep.test.ts',
  'test/integration/metrics.test.ts',
  'test/integration/plan-aging.test.ts',
  'test/integration/wait-merged-timeout.test.ts',
  'test/integration/stuck-task.test.ts',
  'test/integration/scheduler.test.ts',
  'test/integration/sticky-bounce.test.ts',
  'test/workflows/table-shell.test.ts',
  'test/integration/operator-views.test.ts',
];

export const RUN_ALONE = ['test/integration/foresight.test.ts'];

/**
 * Lines of a prefixed lane that name a failure: vitest's FAIL and × lines. They are
 * printed again once both lanes end, so the end of a long log says what failed in a lane
 * that finished minutes before the other.
 */
export const isFailureLine = (line) => /(^|\s)(FAIL|×)\s/.test(line.replace(/\x1b\[[0-9;]*m/g, ''));

/** Runs vitest with `args`; resolves to its exit status. With `prefix`, its output lines are prefixed (two lanes share one terminal) and its failure lines are kept in `failures`. */
function vitest(bin, args, env, cwd, prefix, failures = []) {
  const child = spawn(bin, ['run', ...args], { cwd, env: { ...process.env, ...env }, stdio: prefix ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
  if (prefix) {
    for (const [from, to] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ]) {
      let partial = '';
      from.on('data', (b) => {
        const lines = (partial + b.toString()).split('\n');
        partial = lines.pop();
        for (const line of lines) {
          to.write(`${prefix}${line}\n`);
          if (isFailureLine(line)) failures.push(line);
        }
      });
      from.on('end', () => partial && to.write(`${prefix}${partial}\n`));
    }
  }
  // Ctrl-C reaches the whole process group; other signals are passed on.
  const pass = (sig) => child.kill(sig);
  for (const sig of ['SIGTERM', 'SIGHUP']) process.on(sig, pass);
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      for (const sig of ['SIGTERM', 'SIGHUP']) process.off(sig, pass);
      resolve(code ?? (signal ? 1 : 0));
    }),
  );
}

/**
 * The two lanes at once (each vitest run starts its own dev server and SeaweedFS), then
 * RUN_ALONE. Resolves to the exit status of the suite: the first failing run's.
 */
export async function runSuite({ bin, env, cwd }) {
  process.on('SIGINT', () => {});
  const elsewhere = [...WAIT_LANE, ...RUN_ALONE].flatMap((f) => ['--exclude', f]);
  const waitFailures = [];
  const lanes = await Promise.all([vitest(bin, elsewhere, env, cwd), vitest(bin, ['--no-file-parallelism', ...WAIT_LANE], env, cwd, '[wait lane] ', waitFailures)]);
  const failed = lanes.find((s) => s !== 0);
  if (failed !== undefined) {
    for (const line of waitFailures.slice(0, 40)) console.error(`[wait lane] ${line}`);
    console.error(`turnstile: failed: ${['the main lane', 'the wait lane'].filter((_, i) => lanes[i] !== 0).join(' and ')}`);
    return failed;
  }
  return vitest(bin, RUN_ALONE, env, cwd);
}
