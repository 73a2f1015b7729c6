import { CommanderError, type Command } from 'commander';
import { UsageError } from './args';
import { buildProgram } from './program';

// `turnstile <command>`: the command line of the README. Every bad input, whether the
// parser's (unknown option, missing argument) or a command's (a value out of range, an
// unreadable file), exits 2 with one line naming the field and what it accepts.

/** The parser's own message on one line: "error: unknown option '--x'\n(Did you mean --y?)" -> "unknown option '--x' (Did you mean --y?)". */
const oneLine = (text: string): string =>
  text
    .replace(/^error: /, '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .join(' ');

/** "table create" for the subcommand create of table. */
function commandPath(c: Command): string {
  const names: string[] = [];
  for (let at: Command | null = c; at?.parent; at = at.parent) names.unshift(at.name());
  return names.join(' ');
}

async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  // The command being parsed, to name it in errors (and list its subcommands when one
  // is missing, instead of printing its help to stderr).
  let last: Command = program;
  // Errors are thrown (and printed once, below) instead of written and exited on.
  const quiet = (c: Command): void => {
    c.exitOverride().configureOutput({ outputError: () => {}, writeErr: () => {} });
    c.hook('preSubcommand', (_parent, sub) => {
      last = sub;
    });
    c.commands.forEach(quiet);
  };
  quiet(program);
  if (argv.length === 0) {
    program.outputHelp();
    return;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    if (e.exitCode === 0) return; // --help, help COMMAND, --version
    const where = commandPath(last);
    if (e.code === 'commander.help') {
      throw new UsageError(`${where}: expected a command: ${last.commands.map((c) => c.name()).join(', ')}; see "turnstile ${where} --help"`);
    }
    throw new UsageError(last === program ? oneLine(e.message) : `${where}: ${oneLine(e.message)}`);
  }
}

main(process.argv.slice(2)).then(
  () => {
    if (process.argv[2] !== 'dev' && process.argv[2] !== 'worker') process.exit(0);
  },
  (e: unknown) => {
    let msg = e instanceof Error ? e.message : String(e);
    // A table name without a workflow is bad input too.
    const noTable = e instanceof Error && e.name === 'WorkflowNotFoundError';
    if (noTable) msg = `${msg.split('\n')[0]}: no such table workflow; create the table with "turnstile table create", or check TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE`;
    console.error(`turnstile: ${msg.split('\n')[0]}`);
    process.exit(e instanceof UsageError || noTable ? 2 : 1);
  },
);
