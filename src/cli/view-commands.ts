import { formatBytes } from '../config/bytes';
import type { StatusView } from '../../workflows/messages';
import type { TableClient } from '../client/table-client';
import { int, type Parsed } from './args';
import { tableArg, withTables } from './operator-commands';
import { formatTop, topRows } from './top-rows';
import { sleep } from '../util/sleep';

// Live views for operators: `top` (every running table) and `why` (a table's last turn
// grants and the reason each won).

/** A table whose workflow has no worker does not answer queries; it is listed as such rather than holding up the view. */
const QUERY_TIMEOUT_MS = 3000;

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  p.catch(() => undefined); // the loser of the race must not become an unhandled rejection
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer in ${ms / 1000} s`)), ms).unref())]);
}

async function states(t: TableClient): Promise<{ views: StatusView[]; silent: { table: string; error: string }[] }> {
  const running = await t.list();
  const settled = await Promise.all(running.map((r) => withTimeout(t.state(r.table), QUERY_TIMEOUT_MS).then((v) => ({ v }), (e: Error) => ({ table: r.table, error: e.message }))));
  return {
    views: settled.flatMap((s) => ('v' in s ? [s.v] : [])),
    silent: settled.flatMap((s) => ('error' in s ? [{ table: s.table, error: s.error }] : [])),
  };
}

/** `turnstile top [--once] [--json] [--every SECS]`. */
export async function top(p: Parsed): Promise<void> {
  const everySecs = int(p, 'every', 1, 3600, 2);
  const once = Boolean(p.flags.once) || Boolean(p.flags.json);
  await withTables(async (t) => {
    if (once) {
      const { views, silent } = await states(t);
      const rows = topRows(views);
      console.log(p.flags.json ? JSON.stringify({ tables: rows, unanswered: silent }, null, 2) : formatTop(rows, silent, new Date()));
      return;
    }
    let stop = false;
    process.once('SIGINT', () => (stop = true));
    const tty = process.stdout.isTTY;
    while (!stop) {
      const { views, silent } = await states(t);
      const text = formatTop(topRows(views), silent, new Date());
      // On a terminal redraw in place (cursor home, clear below); piped, one frame after another.
      process.stdout.write(tty ? `\x1b[H\x1b[J${text}\n` : `${text}\n\n`);
      for (let waited = 0; waited < everySecs * 10 && !stop; waited++) await sleep(100);
    }
  });
}

/** `turnstile why NAME [--json]`. */
export async function why(p: Parsed): Promise<void> {
  const name = tableArg(p);
  const s = await withTables((t) => t.operatorState(name));
  const grants = s.grants ?? [];
  // An adopted table's turns are maintenance decisions: what each found and would rewrite.
  const decisions = s.adoptedLog?.decisions.slice(-grants.length || -20) ?? [];
  if (p.flags.json) {
    console.log(JSON.stringify({ table: s.table, turn: s.turn, grants, ...(s.adoptedLog ? { decisions } : {}) }, null, 2));
    return;
  }
  console.log(`table ${s.table}: turn ${s.turn ? `${s.turn.unitId} (${s.turn.why})` : 'free'}`);
  if (!grants.length) console.log(s.grants ? 'no turns granted yet in this record' : 'no grant record (workflow code from before it)');
  else console.log(`last ${grants.length} grant${grants.length === 1 ? '' : 's'}, newest last:`);
  for (const g of grants) {
    const riders = g.riders?.length ? ` (with ${g.riders.join(', ')})` : '';
    console.log(`  ${new Date(g.atMs).toISOString().slice(11, 23)}  ${g.unitId}${riders}  waited ${g.waitedSecs.toFixed(1)} s  won: ${g.why}`);
  }
  if (s.adopted && decisions.length) {
    console.log(`adopted, mode ${s.adopted.mode}: the last ${decisions.length} maintenance decisions`);
    for (const d of decisions) {
      console.log(`  ${new Date(d.atMs).toISOString().slice(11, 23)}  ${d.kind}  ${d.carriedOut ? 'carried out' : 'recorded only'}  ${d.reason}  rewrite ~${formatBytes(d.predictedBytes)}`);
    }
  }
}
