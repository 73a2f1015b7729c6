import { CommanderError, type Command } from 'commander';
import { TimedOutError, UsageError } from '../messages/errors';
import { buildProgram } from './program';
import { EXIT_OVER_BACKLOG, EXIT_TIMED_OUT } from './exit-codes';
import { tlsFailureHint } from '../client/connection-security';
import { commandNames, unknownCommand } from './unknown-command';

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
  const unknown = unknownCommand(program, argv);
  if (unknown !== null) throw new UsageError(unknown);
  // Commander's help command takes one name: `help table create` is `table create --help`.
  const args = argv[0] === 'help' && argv.length > 2 ? [...argv.slice(1), '--help'] : argv;
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    if (e.exitCode === 0) return; // --help, help COMMAND, --version
    const where = commandPath(last);
    if (e.code === 'commander.help') {
      throw new UsageError(`${where}: expected a command: ${commandNames(last).join(', ')}; see "turnstile ${where} --help"`);
    }
    throw new UsageError(last === program ? oneLine(e.message) : `${where}: ${oneLine(e.message)}`);
  }
}

/**
 * Exit status and line of a failure: 2 for bad input of any kind (flags, files, names, a
 * request the client or the workflow's validator refuses), EXIT_OVER_BACKLOG for a seal
 * refused at hardBacklog (retryable, so a script can tell it apart), EXIT_TIMED_OUT for a
 * wait that reached its --timeout, 1 for the rest.
 */
function failure(e: unknown): { message: string; code: number } {
  const err = e instanceof Error ? (e as Error & { cause?: Error & { type?: string } }) : null;
  const message = err ? err.message : String(e);
  if (err?.name === 'OverBacklogError') return { message, code: EXIT_OVER_BACKLOG };
  if (e instanceof TimedOutError) return { message, code: EXIT_TIMED_OUT };
  // A table name without a workflow is bad input too.
  if (err?.name === 'WorkflowNotFoundError') {
    return { message: `${message.split('\n')[0]}: no such table workflow; create the table with "turnstile table create", or check TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE`, code: 2 };
  }
  // An update the workflow's validator refused: its reason is the line.
  if (err?.name === 'WorkflowUpdateFailedError' && (err.cause?.type === 'InvalidRequest' || err.cause?.type === 'InvalidPolicy')) return { message: err.cause.message, code: 2 };
  // A storage root other than the table's workers' (src/client/storage-root-check.ts) is the environment's fault: bad input too.
  return { message, code: e instanceof UsageError || err?.name === 'RequestRefusedError' || err?.name === 'StorageRootMismatchError' ? 2 : 1 };
}

main(process.argv.slice(2)).then(
  () => {
    // Long-running commands keep the process; the others exit as soon as they are done.
    const longRunning = process.argv[2] === 'dev' || process.argv[2] === 'worker' || (process.argv[2] === 'cluster' && process.argv[3] === 'balancer');
    if (!longRunning) process.exit(0);
  },
  (e: unknown) => {
    const { message, code } = failure(e);
    const hint = code === 1 ? tlsFailureHint(message) : null;
    console.error(`turnstile: ${message.split('\n')[0]}${hint ? ` (${hint})` : ''}`);
    process.exit(code);
  },
);
