// The whole suite of `npm test`, in lanes that keep two cores busy. Plain Node.
import { spawn } from 'node:child_process';

/**
 * Files that mostly wait (stall and sticky-queue timeouts, policy periods, writers at a
 * fixed rate) and leave most of a core idle. They run in a lane of their own, one file
 * at a time, beside the two forks of the rest, so their waits overlap work instead of
 * holding a fork. Each alone on 2 cores, wall time / CPU time: stopped-sticky-worker
 * 108 / 25 s, idle 41 / 19 s, adopted 229 / 141 s. The cluster tests stay in the main
 * lane: cluster faults alone is 180 / 126 s, but two clusters at once (faults beside
 * upgrade) stretched upgrade from 216 to 375 s.
 */
export const WAIT_LANE = ['test/integration/adopted.test.ts', 'test/integration/stopped-sticky-worker.test.ts', 'test/integration/idle.test.ts'];

/**
 * Files that compare a run's timing with a model of it (the policy simulator's
 * calibration): on two cores next to another integration file their timings stretch
 * far past what the model knows of, so they run alone, after the lanes.
 */
export const RUN_ALONE = ['test/integration/foresight.test.ts'];

/** Runs vitest with `args`; resolves to its exit status. With `prefix`, its output lines are prefixed (two lanes share one terminal). */
function vitest(bin, args, env, cwd, prefix) {
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
        for (const line of lines) to.write(`${prefix}${line}\n`);
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
  const lanes = await Promise.all([vitest(bin, elsewhere, env, cwd), vitest(bin, ['--no-file-parallelism', ...WAIT_LANE], env, cwd, '[wait lane] ')]);
  const failed = lanes.find((s) => s !== 0);
  if (failed !== undefined) {
    console.error(`turnstile: failed: ${['the main lane', 'the wait lane'].filter((_, i) => lanes[i] !== 0).join(' and ')}`);
    return failed;
  }
  return vitest(bin, RUN_ALONE, env, cwd);
}
