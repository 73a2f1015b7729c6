import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type * as lancedb from '@lancedb/lancedb';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { sleep } from '../../src/util/sleep';
import { readWriterLog, type WriterRun } from './outside-table';
import { eventually, type Harness } from './harness';

// The processes of an adopted-table test: `turnstile` commands and workers as operators
// run them, the outside writers (fixtures/outside-writer.ts, each its own process
// committing to the Lance table directly), and a watcher that looks at the table every
// second from outside, the way a reader of the table would.

const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { bin: { turnstile: string } };
const BIN = path.join(PROJECT_ROOT, pkg.bin.turnstile);

const envFor = (h: Harness): NodeJS.ProcessEnv => ({ ...process.env, TEMPORAL_ADDRESS: h.address, TURNSTILE_DATA: h.dataRoot, TURNSTILE_TASK_QUEUE: h.taskQueue });

/** `turnstile ARGS` against the harness's server, root and queue; its stdout, or throws with its stderr. */
export function turnstile(h: Harness, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [BIN, ...args], { env: envFor(h), timeout: 90_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`turnstile ${args.join(' ')}: ${err.message.split('\n')[0]}: ${stderr.trim()}`));
      else resolve(stdout);
    });
  });
}

export interface WorkerProcess {
  identity: string;
  pid: number;
  /** SIGKILLs the process group (no shutdown, no last heartbeat); the signal it died of. */
  kill(): Promise<NodeJS.Signals | null>;
  /** SIGTERM, as an operator stops one; SIGKILL after 20 s. */
  stop(): Promise<void>;
}

/**
 * A `turnstile worker` process on the harness's queue, in its own process group so a
 * kill takes whatever processes the command runs as. Resolves once it polls.
 */
export async function startWorkerProcess(h: Harness): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [BIN, 'worker'], { env: envFor(h), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_code, signal) => r(signal)));
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  const identity = await eventually(
    async () => {
      if (gone()) throw new Error(`worker exited (${child.exitCode ?? child.signalCode}) before it was up: ${err.trim()}`);
      return /worker on .* identity (\S+)/.exec(out)?.[1];
    },
    'the worker process up',
    120_000,
    100,
  ).catch((e: Error) => {
    signalGroup('SIGKILL');
    throw e;
  });
  return {
    identity,
    pid: child.pid!,
    async kill() {
      signalGroup('SIGKILL');
      return exited;
    },
    async stop() {
      if (gone()) return;
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export interface WriterOptions {
  uri: string;
  logDir: string;
  writers: number;
  batch: number;
  updateShare: number;
  /** Batches a second per writer. */
  rate: number;
}

/** A writer's log read after it stopped; `killed` when it did not end its batch in time. */
export type StoppedWriter = WriterRun & { writer: number; killed: boolean };

/** After SIGTERM a writer ends its batch, or gives a failing one up 20 s on. */
const WRITER_STOP_MS = 30_000;

export interface Writers {
  logs: string[];
  /** Starts them all at once (each waits for "go" after it connected). */
  go(): void;
  /**
   * SIGTERM: each ends after its current batch; one still in its batch after
   * WRITER_STOP_MS is SIGKILLed (its batch may or may not have committed). Their logs.
   */
  stop(): Promise<StoppedWriter[]>;
  /** Each writer's stderr, for a failure message. */
  stderr(): string;
  kill(): void;
}

/** Outside writers (fixtures/outside-writer.ts), connected and waiting for go. */
export async function startWriters(o: WriterOptions): Promise<Writers> {
  const children: ChildProcess[] = [];
  const logs: string[] = [];
  const errs: string[] = [];
  for (let w = 1; w <= o.writers; w++) {
    const log = path.join(o.logDir, `writer-${w}.jsonl`);
    logs.push(log);
    const args = ['--uri', o.uri, '--writer', String(w), '--log', log, '--batch', String(o.batch), '--update-share', String(o.updateShare), '--rate', String(o.rate), '--seed', String(w)];
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'test', 'support', 'fixtures', 'outside-writer.ts'), ...args], {
      cwd: PROJECT_ROOT,
      env: process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.push(child);
    errs.push('');
    child.stderr!.on('data', (d: Buffer) => (errs[w - 1] += d.toString()));
  }
  const kill = () => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGKILL'));
  try {
    await Promise.all(
      children.map(
        (c, i) =>
          new Promise<void>((resolve, reject) => {
            let out = '';
            c.stdout!.on('data', (d: Buffer) => {
              out += d.toString();
              if (out.includes('ready\n')) resolve();
            });
            c.once('exit', (code) => reject(new Error(`writer ${i + 1} exited with ${code} before it was ready: ${errs[i]}`)));
          }),
      ),
    );
  } catch (e) {
    kill();
    throw e;
  }
  return {
    logs,
    go: () => children.forEach((c) => c.stdin!.write('go\n')),
    async stop() {
      return Promise.all(
        children.map(async (c, i) => {
          let killed = false;
          if (c.exitCode === null && c.signalCode === null) {
            const exited = new Promise((r) => c.once('exit', r));
            c.kill('SIGTERM');
            const timer = setTimeout(() => {
              killed = true;
              c.kill('SIGKILL');
            }, WRITER_STOP_MS);
            await exited;
            clearTimeout(timer);
          }
          if (!killed && c.exitCode !== 0) throw new Error(`writer ${i + 1} exited with ${c.exitCode ?? c.signalCode}: ${errs[i]}`);
          return { ...readWriterLog(logs[i]!, i + 1), writer: i + 1, killed };
        }),
      );
    },
    stderr: () =>
      errs
        .map((e, i) => (e.trim() ? `writer ${i + 1}: ${e.trim()}` : ''))
        .filter(Boolean)
        .join('\n'),
    kill,
  };
}

export interface TableSample {
  atMs: number;
  phase: string;
  version: number;
  fragments: number;
  smallFragments: number;
}

/**
 * Looks at the table from outside: its fragments every second, and in a loop of its own
 * (on S3 listing a few hundred versions takes longer than a second) every version
 * listVersions shows, with its timestamp, to check later that none younger than the
 * retention went. A look that fails (a manifest pruned between the listing and the
 * read) is counted.
 */
export class TableWatcher {
  readonly samples: TableSample[] = [];
  /** Every version any listing showed, with its timestamp (ms). */
  readonly seen = new Map<number, number>();
  readonly errors: string[] = [];
  listings = 0;
  phase = '';
  private stopped = false;
  private loops: Promise<void>[] = [];

  constructor(private readonly tbl: lancedb.Table) {}

  start(phase: string): void {
    this.phase = phase;
    this.loops = [this.every(() => this.lookAtFragments()), this.every(() => this.listVersions())];
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }

  /** The samples taken in [fromMs, toMs]. */
  between(fromMs: number, toMs = Infinity): TableSample[] {
    return this.samples.filter((s) => s.atMs >= fromMs && s.atMs <= toMs);
  }

  inPhase(...phases: string[]): TableSample[] {
    return this.samples.filter((s) => phases.includes(s.phase));
  }

  private async every(look: () => Promise<void>): Promise<void> {
    while (!this.stopped) {
      const t0 = Date.now();
      try {
        await look();
      } catch (e) {
        this.errors.push((e instanceof Error ? e.message : String(e)).split('\n')[0]!);
      }
      await sleep(Math.max(0, 1000 - (Date.now() - t0)));
    }
  }

  private async lookAtFragments(): Promise<void> {
    const phase = this.phase;
    const stats = await this.tbl.stats();
    const version = await this.tbl.version();
    this.samples.push({ atMs: Date.now(), phase, version, fragments: stats.fragmentStats.numFragments, smallFragments: stats.fragmentStats.numSmallFragments });
  }

  private async listVersions(): Promise<void> {
    for (const v of await this.tbl.listVersions()) if (!this.seen.has(v.version)) this.seen.set(v.version, new Date(v.timestamp).getTime());
    this.listings++;
  }
}
