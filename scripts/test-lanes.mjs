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

const plain = (line) => line.replace(/\x1b\[[0-9;]*m/g, '');

/** vitest's FAIL and × lines. */
export const isFailureLine = (line) => /(^|\s)(FAIL|×)\s/.test(plain(line));

/** A test's line meant for its failure report (a test prints it only when it failed). */
export const ON_FAILURE = '[on failure] ';

/** The most lines of one lane printed again at the end. */
const REPORT_LINES = 150;

/**
 * What a lane printed about its failures: its FAIL and × lines as they came, the lines
 * tests printed with ON_FAILURE, and the "Failed Tests" section vitest ends with (each
 * failed test with its assertion and stack).
 * Both are printed again once both lanes end, so the end of a long log says what failed
 * and why in a lane that finished minutes before the other.
 */
export class FailureReport {
  lines = [];
  inSection = false;

  add(line) {
    const text = plain(line);
    if (/Failed Tests \d+/.test(text)) this.inSection = true;
    else if (this.inSection && /^\s*Test Files\s/.test(text)) this.inSection = false;
    if ((this.inSection || isFailureLine(text) || text.includes(ON_FAILURE)) && this.lines.length < REPORT_LINES) this.lines.push(text);
  }
}

/** Runs vitest with `args`; resolves to its exit status. Its output lines are prefixed with `prefix` (two lanes share one terminal) and fed to `report`. */
function vitest(bin, args, env, cwd, prefix, report) {
  const child = spawn(bin, ['run', ...args], { cwd, env: { ...process.env, ...env }, stdio: report ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
  if (report) {
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
          report.add(line);
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
  const lanes = [
    { name: 'the main lane', prefix: '', report: new FailureReport() },
    { name: 'the wait lane', prefix: '[wait lane] ', report: new FailureReport() },
  ];
  const statuses = await Promise.all([
    vitest(bin, elsewhere, env, cwd, lanes[0].prefix, lanes[0].report),
    vitest(bin, ['--no-file-parallelism', ...WAIT_LANE], env, cwd, lanes[1].prefix, lanes[1].report),
  ]);
  const failed = lanes.filter((_, i) => statuses[i] !== 0);
  if (failed.length > 0) {
    for (const lane of failed) for (const line of lane.report.lines) console.error(`[${lane.name}] ${line}`);
    console.error(`turnstile: failed: ${failed.map((l) => l.name).join(' and ')}`);
    return statuses.find((s) => s !== 0);
  }
  return vitest(bin, RUN_ALONE, env, cwd);
}
