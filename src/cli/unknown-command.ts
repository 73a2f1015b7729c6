import type { Command } from 'commander';

// Commander honours --help before it notices an unknown command, so
// `turnstile frobnicate --help` would print the global help and exit 0, as if the command
// existed. The command path is checked here first, so every unknown command (with or
// without --help, or after `help`) is refused with one line naming it.

/** The commands a user may type under `c`, as its help lists them (no hidden ones, no `help`). */
export function commandNames(c: Command): string[] {
  return c
    .createHelp()
    .visibleCommands(c)
    .map((x) => x.name())
    .filter((n) => n !== 'help');
}

/** Optimal string alignment distance: edits, with a swap of two neighbours as one edit. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i]!;
      row[j] = Math.min(d[i - 1]![j]! + 1, row[j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The closest names within 2 edits that keep most of the word (commander's rule), or []. */
export function similarNames(word: string, names: readonly string[]): string[] {
  let best = 3;
  let similar: string[] = [];
  for (const name of names) {
    const distance = editDistance(word, name);
    const length = Math.max(word.length, name.length);
    if ((length - distance) / length <= 0.4) continue;
    if (distance < best) [best, similar] = [distance, [name]];
    else if (distance === best) similar.push(name);
  }
  return similar.sort();
}

/**
 * The refusal of the first unknown command name in `argv` (e.g. "table: unknown command
 * 'frob'; accepted: create, adopt, reset, list"), or null when the command path is known. Only
 * the words naming commands are looked at: the walk stops at a command without
 * subcommands, whose own parser reads the rest. Dashed words before that are skipped:
 * commands with subcommands take only --help and --version, which have no value.
 */
export function unknownCommand(program: Command, argv: readonly string[]): string | null {
  let at = program;
  const path: string[] = [];
  for (const word of argv) {
    if (at.commands.length === 0 || word === '--') return null;
    if (word.startsWith('-')) continue;
    // `help table create` names the command whose help to print.
    if (word === 'help' && !at.commands.some((c) => c.name() === 'help')) continue;
    const sub = at.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!sub) {
      const names = commandNames(at);
      const similar = similarNames(word, names);
      const hint = similar.length > 0 ? ` (Did you mean ${similar.length > 1 ? 'one of ' : ''}${similar.join(', ')}?)` : '';
      return `${path.length > 0 ? `${path.join(' ')}: ` : ''}unknown command '${word}'${hint}; accepted: ${names.join(', ')}`;
    }
    path.push(word);
    at = sub;
  }
  return null;
}
