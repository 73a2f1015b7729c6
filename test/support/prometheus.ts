import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/server/ports';
import { eventually } from './harness';

// A real Prometheus server scraping the given targets every second, in a temporary
// directory, and the bits of its HTTP API the tests read.

export interface PromServer {
  url: string;
  /** Instant query: the result vector. */
  query(q: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** Every metric name it has stored. */
  names(): Promise<string[]>;
  stop(): Promise<void>;
}

export async function startPrometheus(binary: string, targets: string[]): Promise<PromServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-prom-'));
  const config = ['global:', '  scrape_interval: 1s', 'scrape_configs:', '  - job_name: turnstile', '    static_configs:', `      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]`].join('\n');
  fs.writeFileSync(path.join(dir, 'prometheus.yml'), config);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const log = fs.openSync(path.join(dir, 'prometheus.log'), 'a');
  const child: ChildProcess = spawn(binary, [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', log, log] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await eventually(async () => child.exitCode === null && (await fetch(`${url}/-/ready`)).ok, `prometheus ready (log ${dir}/prometheus.log)`, 30_000);
  const api = async <T>(p: string): Promise<T> => {
    const r = (await (await fetch(`${url}${p}`)).json()) as { status: string; data: T; error?: string };
    if (r.status !== 'success') throw new Error(`prometheus ${p}: ${r.error}`);
    return r.data;
  };
  return {
    url,
    query: async (q) => (await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(`/api/v1/query?query=${encodeURIComponent(q)}`)).result,
    names: () => api<string[]>('/api/v1/label/__name__/values'),
    async stop() {
      child.kill('SIGTERM');
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
