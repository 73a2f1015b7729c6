import { parseArgs, UsageError } from './args';

// `turnstile <command>`: the command line of the README. Every bad input exits non-zero
// with one line naming the field and what it accepts.

const USAGE = `usage:
  turnstile dev [--data DIR] [--port 7233] [--ui-port 8233] [--workers N] [--demo]
  turnstile worker
  turnstile table create NAME --key COL [--shards N] [--policy FILE] [--indices COL:TYPE,...]
  turnstile table list [--json]
  turnstile status NAME [--json]
  turnstile write NAME --shard S (--rows N [--keys A..B] | --file F.arrow)
  turnstile wait-merged NAME --shard S --seq N [--timeout SECS]
  turnstile bump NAME (--kind K | --unit ID) [--class C] --reason TEXT [--for SECS]
  turnstile pause NAME [--kind K]
  turnstile resume NAME [--kind K]
  turnstile policy NAME --set FILE`;

async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv;
  const p = (booleans: string[] = []) => parseArgs(rest, booleans);
  switch (cmd) {
    case 'dev':
      return (await import('./dev')).dev(p(['demo']));
    case 'worker':
      return (await import('./worker')).worker(p());
    case 'table': {
      const [sub, ...more] = rest;
      const t = await import('./table-commands');
      if (sub === 'create') return t.create(parseArgs(more));
      if (sub === 'list') return t.list(parseArgs(more, ['json']));
      throw new UsageError('table: expected "create" or "list"');
    }
    case 'status':
      return (await import('./operator-commands')).status(p(['json']));
    case 'write':
      return (await import('./write')).write(p());
    case 'wait-merged':
      return (await import('./operator-commands')).waitMerged(p());
    case 'bump':
      return (await import('./operator-commands')).bump(p());
    case 'pause':
    case 'resume':
      return (await import('./operator-commands')).pauseOrResume(p(), cmd);
    case 'policy':
      return (await import('./operator-commands')).policy(p());
    case undefined:
    case 'help':
    case '--help':
      console.log(USAGE);
      return;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(cmd)}; run "turnstile help"`);
  }
}

main(process.argv.slice(2)).then(
  () => {
    if (process.argv[2] !== 'dev' && process.argv[2] !== 'worker') process.exit(0);
  },
  (e: unknown) => {
    let msg = e instanceof Error ? e.message : String(e);
    if (e instanceof Error && e.name === 'WorkflowNotFoundError') {
      msg = `${msg.split('\n')[0]}: no such table workflow; create the table with "turnstile table create", or check TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE`;
    }
    console.error(`turnstile: ${e instanceof UsageError ? msg : msg.split('\n')[0]}`);
    process.exit(e instanceof UsageError ? 2 : 1);
  },
);
