import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import v8 from 'node:v8';
import vm from 'node:vm';
import path from 'node:path';
import { PROJECT_ROOT } from '../src/util/project-paths';
import { startDevServer, type DevServer } from '../src/server/dev-server';
import { startOwnSeaweedfs, type Seaweed } from '../src/server/seaweedfs';
import { withWorkerMalloc } from '../src/worker/allocator-env';
import { startLatencyProxy, type LatencyProxy } from './latency-proxy';

// What every benchmark needs: a Temporal server (its own, or TEMPORAL_ADDRESS), worker
// processes whose peak memory can be read, and percentiles.

/** The Temporal server binary: TEMPORAL_SERVER_PATH, else found or built by scripts/ensure-temporal.mjs. */
export async function temporalBinary(): Promise<string> {
  if (process.env.TEMPORAL_SERVER_PATH) return process.env.TEMPORAL_SERVER_PATH;
  const mod = (await import(path.join(PROJECT_ROOT, 'scripts', 'ensure-temporal.mjs'))) as { ensureTemporal(): { binary?: string } };
  return mod.ensureTemporal().binary!;
}

/** TEMPORAL_ADDRESS when set, else a headless dev server of our own under `dir`. */
export async function benchServer(dir: string, opts: { startDevDefaults?: boolean; pprofPort?: number } = {}): Promise<{ address: string; server?: DevServer }> {
  if (process.env.TEMPORAL_ADDRESS) return { address: process.env.TEMPORAL_ADDRESS };
  const server = await startDevServer({ binary: await temporalBinary(), dbFile: path.join(dir, 'temporal.db'), headless: true, logFile: path.join(dir, 'temporal.log'), ...opts });
  return { address: server.address, server };
}

/**
 * A SeaweedFS of our own under `dir`; its AWS environment is set in this process (and so
 * passed to worker processes). With `latencyMs`, every request reaches it through a proxy
 * that delays it that long (latency-proxy.ts), as a remote object store would.
 */
export async function benchS3(dir: string, opts: { latencyMs?: number } = {}): Promise<{ root: string; server: Seaweed; proxy?: LatencyProxy }> {
  const server = await startOwnSeaweedfs(dir, 'turnstile-bench');
  const root = `s3://${server.bucket}/bench`;
  if (!opts.latencyMs) return { root, server };
  const proxy = await startLatencyProxy(server.endpoint, opts.latencyMs);
  process.env.AWS_ENDPOINT_URL = proxy.url;
  const stop = async () => {
    await proxy.close();
    await server.stop();
  };
  return { root, server: { ...server, env: { ...server.env, AWS_ENDPOINT_URL: proxy.url }, stop }, proxy };
}

/** A size field of /proc/PID/status (VmHWM, VmRSS) in bytes, or null without /proc. */
function procStatusBytes(pid: number, field: 'VmHWM' | 'VmRSS'): number | null {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Peak resident set (VmHWM) of a live process, from /proc: what the kernel itself tracked. */
export const peakRssBytes = (pid: number): number | null => procStatusBytes(pid, 'VmHWM');

/** Resident set (VmRSS) of a live process now, from /proc. */
export const rssBytes = (pid: number): number | null => procStatusBytes(pid, 'VmRSS');

/**
 * Sets a process's VmHWM back to its RSS now (Linux: 5 written to /proc/PID/clear_refs),
 * so the next peakRssBytes is the peak of what ran since; false where that is not allowed.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

const workerTunables = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => {
  const extra = env.BENCH_WORKER_GLIBC_TUNABLES;
  return extra ? { ...env, GLIBC_TUNABLES: [env.GLIBC_TUNABLES, extra].filter(Boolean).join(':') } : env;
};

/** A `turnstile worker` process of its own, so its peak RSS is the worker's alone. */
export async function startWorkerProcess(address: string, taskQueue: string, root: string, env: NodeJS.ProcessEnv = {}): Promise<ChildProcess> {
  // BENCH_WORKER_NODE_ARGS='--cpu-prof --cpu-prof-dir=DIR' profiles the worker;
  // BENCH_WORKER_STDOUT=FILE appends its output there (e.g. with '--trace-gc').
  const extra = (process.env.BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // The compiled CLI, as `turnstile worker` runs in production (tsx adds its loader to
  // every module and ~5% worker CPU); BENCH_WORKER_TSX=1 runs the sources instead.
  const entry = process.env.BENCH_WORKER_TSX ? ['--import', 'tsx', path.join(PROJECT_ROOT, 'src', 'cli', 'main.ts')] : [path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs')];
  const child = spawn(process.execPath, [...extra, ...entry, 'worker'], {
    cwd: PROJECT_ROOT,
    // As README "Running workers" asks of every deployment; BENCH_WORKER_PLAIN_MALLOC=1 leaves it out,
    // BENCH_WORKER_GLIBC_TUNABLES='glibc.malloc.arena_max=2' (say) adds to it for the worker alone.
    env: { ...(process.env.BENCH_WORKER_PLAIN_MALLOC ? process.env : withWorkerMalloc(workerTunables(process.env))), TEMPORAL_ADDRESS: address, TURNSTILE_TASK_QUEUE: taskQueue, TURNSTILE_DATA: root, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const copy = process.env.BENCH_WORKER_STDOUT ? fs.createWriteStream(process.env.BENCH_WORKER_STDOUT, { flags: 'a' }) : null;
    child.stdout!.on('data', (b: Buffer) => {
      copy?.write(b);
      out += b.toString();
      if (out.includes('worker on ')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before it was ready: ${out}`)));
  });
  return child;
}

/** Stops a worker process gracefully and waits for it. */
export async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** Fields of /proc/PID/stat after the command (field 3, state, is index 0), or null without /proc. */
function procStat(pid: number, file = `/proc/${pid}/stat`): string[] | null {
  try {
    return fs.readFileSync(file, 'utf8').replace(/^.*\) /, '').split(' ');
  } catch {
    return null;
  }
}

/** `read` of each thread's stat fields of a live process, summed by thread name. */
function perThread(pid: number, read: (fields: string[]) => number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    let name: string;
    try {
      name = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    // Node names every thread it starts after itself: the main one at least is told apart.
    if (tid === String(pid)) name = `${name} (main)`;
    const f = procStat(pid, `/proc/${pid}/task/${tid}/stat`);
    if (f) out.set(name, (out.get(name) ?? 0) + read(f));
  }
  return out;
}

/**
 * CPU seconds so far of each thread of a live process, summed by thread name (Node's
 * main and workflow threads, V8's GC helpers, tokio's runtimes under Lance and the
 * Temporal core, libuv's pool): which part of a worker a run kept busy.
 */
export const threadCpuSeconds = (pid: number): Map<string, number> => perThread(pid, (f) => (Number(f[11]) + Number(f[12])) / 100);

/** Minor page faults so far of each thread of a live process, by thread name: which part of a worker touched fresh memory. */
export const threadMinorFaults = (pid: number): Map<string, number> => perThread(pid, (f) => Number(f[7]));

/** Per thread name, what grew from `then` to `now` (two readings of the above), at least `min`, most first. */
export const threadsSince = (now: Map<string, number>, then: Map<string, number>, min = 0): [string, number][] =>
  [...now]
    .map(([name, n]): [string, number] => [name, n - (then.get(name) ?? 0)])
    .filter(([, n]) => n >= min)
    .sort((x, y) => y[1] - x[1]);

/** CPU seconds (user + system) a live process has used so far, from /proc (clock ticks of 1/100 s). */
export function cpuSeconds(pid: number): number | null {
  const fields = procStat(pid);
  // utime and stime are fields 14 and 15 (1-based).
  return fields ? (Number(fields[11]) + Number(fields[12])) / 100 : null;
}

/**
 * Minor page faults so far (field 10): each is a page touched for the first time since
 * the process got it from the kernel; what one costs varies by host (firstTouchMicros).
 */
export function minorFaults(pid: number): number | null {
  const fields = procStat(pid);
  return fields ? Number(fields[7]) : null;
}

/**
 * Microseconds to first touch one 4 KiB page of fresh memory in this process: a probe of
 * `mibs` MiB, written one byte per page. On VMs whose freed memory goes back to the host
 * (a balloon's free page reporting) every process pays it again for every page it has
 * not touched before, so a cold process's fresh memory is a CPU cost of its own.
 */
export function firstTouchMicros(mibs = 64): number {
  const t0 = performance.now();
  const buf = Buffer.allocUnsafeSlow(mibs * 2 ** 20);
  for (let i = 0; i < buf.length; i += 4096) buf[i] = 1;
  return ((performance.now() - t0) * 1000) / (buf.length / 4096);
}

export const mib = (bytes: number | null): string => (bytes === null ? 'unknown' : `${(bytes / 2 ** 20).toFixed(1)} MiB`);

/**
 * A worker's peak RSS beside the generation bytes it had to merge, the multiple every bench
 * that merges reports (the fleet's admission reserves memory per byte of a unit's
 * generations, activities/memory-reservations.ts).
 */
export function peakRssPerByte(pid: number, generationBytes: number): string {
  const peak = peakRssBytes(pid);
  if (peak === null) return 'peak RSS unknown';
  return `peak RSS ${mib(peak)} for ${mib(generationBytes)} of generations (${generationBytes > 0 ? `${(peak / generationBytes).toFixed(1)}x` : 'none'})`;
}

/**
 * A full garbage collection of this process, before a timed section: the bench's own
 * garbage (the generated rows, a previous method's batches) was otherwise collected
 * whenever V8 chose, sometimes inside a timed run (seen: the writers' process took 1.0
 * instead of ~0.2 CPU s during one A, and A's commits slowed beside it).
 */
export function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
}
