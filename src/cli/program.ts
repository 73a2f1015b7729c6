import { Command, type Option } from 'commander';
import { version } from '../../package.json';
import type { Parsed } from './args';

// The command tree of DESIGN.md ("Command line") on commander: help for every command,
// --version, unknown options and missing arguments rejected by the parser. Each action
// imports its command module only when it runs, so `status` never loads the worker,
// lancedb or Arrow, and `--help` loads none of them.

type Handler = (p: Parsed) => Promise<void>;

/** The flags as the command modules read them: long names without dashes, values as given. */
function parsedOf(cmd: Command): Parsed {
  const flags: Record<string, string | true> = {};
  for (const o of cmd.options as readonly Option[]) {
    const v: unknown = cmd.getOptionValue(o.attributeName());
    if (v !== undefined && o.long) flags[o.long.slice(2)] = v as string | true;
  }
  return { positionals: cmd.args, flags };
}

const run =
  (load: () => Promise<Handler>) =>
  async (...args: unknown[]): Promise<void> => {
    const cmd = args[args.length - 1] as Command;
    await (await load())(parsedOf(cmd));
  };

const KIND_HELP = 'kind: merge, optimize, index or gc';

export function buildProgram(): Command {
  const program = new Command('turnstile')
    .description('Maintenance orchestrator for Lance tables on Temporal: one workflow per table owns the write-turn.')
    .version(version, '--version', 'print the version')
    .helpOption('-h, --help', 'show help for the command')
    .addHelpText(
      'after',
      '\nEvery command but dev talks to TEMPORAL_ADDRESS (default 127.0.0.1:7233) and TEMPORAL_NAMESPACE (default default);\n' +
        'tables live under TURNSTILE_DATA (default .turnstile/data). Bad input exits 2 with one line naming the field.',
    );

  program
    .command('dev')
    .description('start the embedded Temporal dev server (SQLite), workers and optionally the demo table')
    .option('--data <DIR>', 'folder of the server database and the tables (default .turnstile)')
    .option('--port <PORT>', 'Temporal gRPC port (default 7233)')
    .option('--ui-port <PORT>', 'Temporal UI port (default 8233)')
    .option('--workers <N>', 'workers in this process, 1..32 (default 1)')
    .option('--demo', 'create table demo and write a few generations into it')
    .option('--storage <KIND>', 'fs (default: tables under --data) or s3 (an embedded SeaweedFS under --data; tables in s3://turnstile/data)')
    .action(run(async () => (await import('./dev')).dev));

  const cluster = program.command('cluster').description('a local multi-node Temporal cluster on its own PostgreSQL, with the UI and workers');
  cluster
    .command('up')
    .description('start PostgreSQL, N Temporal server nodes, the UI server and N workers under --dir; returns when all serve')
    .option('--nodes <N>', 'Temporal server nodes, 1..5 (default 2)')
    .option('--workers <N>', 'turnstile workers, 0..16 (default 2)')
    .option('--dir <DIR>', 'folder of the database, configs, logs and tables (default .turnstile/cluster); as root, user postgres must reach it')
    .option('--tls <DIR>', 'frontend mTLS: a folder with ca.pem, server.pem, server.key, client.pem, client.key')
    .option('--tls-server-name <NAME>', 'the name in server.pem that clients check (default localhost)')
    .action(run(async () => (await import('./cluster')).up));
  cluster
    .command('status')
    .description('every process of the cluster: role, pid, address, running or dead')
    .option('--dir <DIR>', 'the cluster folder (default .turnstile/cluster)')
    .option('--json', 'print JSON')
    .action(run(async () => (await import('./cluster')).status));
  cluster
    .command('down')
    .description('stop every process of the cluster (workers first, PostgreSQL last); data is kept')
    .option('--dir <DIR>', 'the cluster folder (default .turnstile/cluster)')
    .action(run(async () => (await import('./cluster')).down));
  cluster
    .command('add-workers')
    .description("start N more workers running this checkout's build, beside the running ones (an upgrade)")
    .option('--workers <N>', 'how many, 1..16 (default 2)')
    .option('--dir <DIR>', 'the cluster folder (default .turnstile/cluster)')
    .action(run(async () => (await import('./cluster')).addWorkers));
  cluster
    .command('stop-workers')
    .description('stop the workers of one version (once `upgrade status` shows it drained)')
    .option('--build <ID>', 'build id (required)')
    .option('--dir <DIR>', 'the cluster folder (default .turnstile/cluster)')
    .action(run(async () => (await import('./cluster')).stopWorkers));
  cluster
    .command('balancer', { hidden: true })
    .option('--port <PORT>')
    .option('--to <ADDRS>')
    .action(run(async () => (await import('./cluster')).balancer));

  program
    .command('worker')
    .description('run one stateless worker against TEMPORAL_ADDRESS (scale by running more)')
    .action(run(async () => (await import('./worker')).worker));

  const upgrade = program.command('upgrade').description('Worker Deployment versions: which one table runs go to, and how many runs each still holds');
  upgrade
    .command('status')
    .description('versions of the deployment, current/ramping, table runs per version, drained or not')
    .option('--json', 'print JSON')
    .action(run(async () => (await import('./upgrade')).status));
  upgrade
    .command('set-current')
    .description('send new and continued-as-new table runs to this version; every table moves at its next continue-as-new')
    .argument('<BUILD_ID>', 'a build id that `upgrade status` lists')
    .action(run(async () => (await import('./upgrade')).setCurrent));
  upgrade
    .command('ramp')
    .description('send this share of continued-as-new table runs to a version besides the current one')
    .argument('<BUILD_ID>', 'a build id that `upgrade status` lists')
    .option('--percent <P>', 'share of runs, 0..100 (required)')
    .action(run(async () => (await import('./upgrade')).ramp));

  program
    .command('workers')
    .description('live workers sharing TURNSTILE_DATA: budget, reserved bytes, running units, last seen')
    .option('--json', 'print JSON')
    .action(run(async () => (await import('./workers-command')).workers));

  const table = program.command('table').description('create, list or reset tables');
  table
    .command('create')
    .description("write the table's metadata and start its workflow")
    .argument('<NAME>', 'table name')
    .option('--key <COL>', 'primary-key column (required)')
    .option('--shards <N>', 'shards s0..s(N-1), 1..256 (default 1)')
    .option('--policy <FILE>', 'JSON file of policy overrides for this table')
    .option('--indices <COL:TYPE,...>', 'indices kept built; TYPE: btree, bitmap, ivf_flat, ivf_pq')
    .action(run(async () => (await import('./table-commands')).create));
  table
    .command('adopt')
    .description('maintain an existing Lance table that others write directly; starts in shadow mode')
    .argument('<NAME>', 'table name')
    .option('--uri <URI>', 'the Lance table directory: a path or s3://BUCKET/PREFIX ending in NAME.lance (required)')
    .option('--key <COL>', 'its primary-key column, if it has one')
    .option('--policy <FILE>', 'JSON file of policy overrides, over the adopted defaults')
    .action(run(async () => (await import('./adopt-commands')).adopt));
  table
    .command('reset')
    .description("restart the table's run from its first workflow task (a run whose workflow task keeps failing); signals since are heard again")
    .argument('<NAME>', 'table name')
    .option('--reason <TEXT>', 'why, recorded in the run history (required)')
    .action(run(async () => (await import('./table-commands')).reset));
  table
    .command('list')
    .description('tables under TURNSTILE_DATA and whether their workflows run')
    .option('--json', 'print JSON')
    .action(run(async () => (await import('./table-commands')).list));

  program
    .command('mode')
    .description("an adopted table's mode: shadow (decide and record) or active (carry out)")
    .argument('<NAME>', 'table name')
    .argument('<MODE>', 'shadow or active')
    .action(run(async () => (await import('./adopt-commands')).mode));

  program
    .command('shadow-report')
    .description('an adopted table: what Turnstile decided (or did) next to what happened to the table')
    .argument('<NAME>', 'table name')
    .option('--json', 'print JSON')
    .action(run(async () => (await import('./adopt-commands')).report));

  program
    .command('status')
    .description("the table's turn, backlog, shards, queue with reasons, and counters")
    .argument('<NAME>', 'table name')
    .option('--json', 'print the status object of DESIGN.md')
    .action(run(async () => (await import('./operator-commands')).status));

  program
    .command('write')
    .description('seal generations and signal the table; honours write pressure')
    .argument('<NAME>', 'table name')
    .option('--shard <S>', 'seal into this shard; without it, --file rows are routed to their shards (one generation each)')
    .option('--rows <N>', 'generate N rows (needs --shard), 1..10000000')
    .option('--keys <A..B>', 'key range of generated rows (default 0..4N-1)')
    .option('--seed <N>', 'seed of generated values')
    .option('--file <F.arrow>', 'an Arrow IPC file; columns are cast losslessly to the table schema')
    .action(run(async () => (await import('./write')).write));

  program
    .command('wait-merged')
    .description('wait until a sealed seq of a shard is merged into the table')
    .argument('<NAME>', 'table name')
    .option('--shard <S>', 'shard (required)')
    .option('--seq <N>', 'seq to wait for (required)')
    .option('--timeout <SECS>', 'give up after this long (exit 124), 1..86400 (default 600)')
    .action(run(async () => (await import('./operator-commands')).waitMerged));

  program
    .command('bump')
    .description("raise a unit's or a kind's scheduling class for a while")
    .argument('<NAME>', 'table name')
    .option('--kind <K>', KIND_HELP)
    .option('--unit <ID>', 'unit id, e.g. merge/s0')
    .option('--class <C>', 'class 1..4, 1 most urgent (default 1)')
    .option('--reason <TEXT>', 'why; shown in status and the UI (required)')
    .option('--for <SECS>', 'how long, 1..604800 (default 600)')
    .action(run(async () => (await import('./operator-commands')).bump));

  for (const action of ['pause', 'resume'] as const) {
    program
      .command(action)
      .description(`${action} a table's maintenance, or one kind of it`)
      .argument('<NAME>', 'table name')
      .option('--kind <K>', KIND_HELP)
      .action(run(async () => (p) => import('./operator-commands').then((m) => m.pauseOrResume(p, action))));
  }

  program
    .command('top')
    .description('a live view of every table (backlog, pressure, turn, longest wait, drain ETA, stalled), most backed-up first')
    .option('--once', 'print one view and exit')
    .option('--json', 'print one view as JSON and exit')
    .option('--every <SECS>', 'refresh period, 1..3600 (default 2)')
    .action(run(async () => (await import('./view-commands')).top));

  program
    .command('why')
    .description("the table's last turn grants and why each unit won (class, promotion, bump, aging)")
    .argument('<NAME>', 'table name')
    .option('--json', 'print JSON')
    .action(run(async () => (await import('./view-commands')).why));

  program
    .command('history')
    .description('every unit the table ran, newest last: kind, times, outcome, why, rows, bytes read and written, CPU, reserved bytes')
    .argument('<NAME>', 'table name')
    .option('--since <DURATION>', 'only units that ended this long ago or later, e.g. 90s, 15m, 6h, 7d (at most 30d)')
    .option('--json', 'print JSON')
    .action(run(async () => (await import('./history')).history));

  program
    .command('policy')
    .description("change a table's policy (validated by its workflow, kept in table.json), or try it first with --dry-run")
    .argument('<NAME>', 'table name')
    .option('--set <FILE>', 'JSON file of policy keys (required)')
    .option('--dry-run', "change nothing: replay the table's recorded demand under its current and the proposed policy")
    .option('--hours <H>', 'with --dry-run: the recorded hours to replay, 0.1..168 (default 24)')
    .option('--json', 'with --dry-run: print JSON')
    .action(run(async () => (await import('./operator-commands')).policy));

  return program;
}
