import fs from 'node:fs';
import * as lancedb from '@lancedb/lancedb';
import { arrow } from './src/storage/arrow';
const vm = (f: string) => Number(new RegExp(`${f}:\\s+(\\d+) kB`).exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) / 1024;
async function main() {
  const N = Number(process.argv[2]);
  const dir = `/tmp/ib-${N}`; fs.rmSync(dir, { recursive: true, force: true });
  const db = await lancedb.connect(dir);
  const mk = (from: number, n: number) => arrow.tableFromArrays({ id: BigInt64Array.from({ length: n }, (_, i) => BigInt(from + i)), value: Array.from({ length: n }, (_, i) => `value ${from + i}`), _seq: BigInt64Array.from({ length: n }, () => 1n) });
  const t = await db.createTable('t', mk(0, Math.min(N, 500_000)));
  for (let f = 500_000; f < N; f += 500_000) await t.add(mk(f, Math.min(500_000, N - f)));
  const tbl = await db.openTable('t');
  global.gc?.();
  const rss = vm('VmRSS'); fs.writeFileSync('/proc/self/clear_refs', '5');
  const c0 = process.cpuUsage(); const t0 = performance.now();
  await tbl.createIndex('id', { config: lancedb.Index.btree() });
  const c = process.cpuUsage(c0);
  console.log(`N=${N}: build ${(performance.now() - t0).toFixed(0)} ms wall, ${((c.user + c.system) / 1000).toFixed(0)} ms cpu, RSS before ${rss.toFixed(0)} MiB, peak during ${vm('VmHWM').toFixed(0)} MiB (+${(vm('VmHWM') - rss).toFixed(0)})`);
  fs.rmSync(dir, { recursive: true, force: true });
}
void main();
