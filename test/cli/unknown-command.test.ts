import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { buildProgram } from '../../src/cli/program';
import { commandNames, similarNames, unknownCommand } from '../../src/cli/unknown-command';

// An unknown command is bad input even with --help after it: the parser would print the
// global help and exit 0, as if `turnstile frobnicate` existed.

const TOP = commandNames(buildProgram()).join(', ');

it('lists the commands as the help does: no hidden ones, not help itself', () => {
  expect(TOP).toMatch(/^dev, cluster, worker, .*\bstatus\b.*\bpolicy\b/);
  expect(commandNames(buildProgram().commands.find((c) => c.name() === 'cluster')!)).toEqual(['up', 'status', 'down', 'add-workers', 'stop-workers']);
});

describe('unknownCommand', () => {
  const check = (...argv: string[]) => unknownCommand(buildProgram(), argv);

  it('names an unknown command and the accepted ones, with or without --help, at any depth', () => {
    expect(check('frobnicate', '--help')).toBe(`unknown command 'frobnicate'; accepted: ${TOP}`);
    expect(check('frobnicate')).toBe(`unknown command 'frobnicate'; accepted: ${TOP}`);
    expect(check('table', 'frob', '-h')).toBe("table: unknown command 'frob'; accepted: create, adopt, reset, list");
    expect(check('help', 'frobnicate')).toBe(`unknown command 'frobnicate'; accepted: ${TOP}`);
    expect(check('--help', 'frobnicate')).toBe(`unknown command 'frobnicate'; accepted: ${TOP}`);
  });

  it('suggests the closest command', () => {
    expect(check('stauts', '--help')).toBe(`unknown command 'stauts' (Did you mean status?); accepted: ${TOP}`);
    expect(check('cluster', 'upp')).toMatch(/^cluster: unknown command 'upp' \(Did you mean up\?\); accepted: up, status, down, add-workers, stop-workers$/);
    expect(similarNames('pase', ['pause', 'resume', 'page'])).toEqual(['page', 'pause']);
    expect(similarNames('zzzzzz', ['pause', 'resume'])).toEqual([]);
  });

  it('leaves known command paths, their arguments and the help command to the parser', () => {
    for (const argv of [[], ['--help'], ['--version'], ['help'], ['help', 'status'], ['status', '--help'], ['status', 'frobnicate'], ['table', 'create', 'x', '--key', 'id'], ['cluster', 'balancer', '--port', '1'], ['write', 'orders', '--', 'frob']]) {
      expect(check(...argv), argv.join(' ')).toBeNull();
    }
  });
});

describe('turnstile (the installed command)', () => {
  const BIN = path.join(PROJECT_ROOT, 'scripts', 'turnstile.mjs');
  const run = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) =>
      execFile(process.execPath, [BIN, ...args], { timeout: 90_000 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })),
    );

  it('refuses an unknown command with --help: exit 2, one line, nothing on stdout', async () => {
    for (const argv of [['frobnicate', '--help'], ['table', 'frob', '--help'], ['help', 'frobnicate']]) {
      const r = await run(...argv);
      expect({ code: r.code, stdout: r.stdout, lines: r.stderr.trim().split('\n').length }, argv.join(' ')).toEqual({ code: 2, stdout: '', lines: 1 });
      expect(r.stderr).toMatch(/^turnstile: (table: )?unknown command '(frobnicate|frob)'; accepted: /);
    }
  });

  it('still prints help for --help, help, help COMMAND and COMMAND --help', async () => {
    for (const [argv, usage] of [
      [['--help'], 'turnstile [options] [command]'],
      [['help'], 'turnstile [options] [command]'],
      [['help', 'status'], 'turnstile status [options] <NAME>'],
      [['status', '--help'], 'turnstile status [options] <NAME>'],
      [['table', 'create', '--help'], 'turnstile table create [options] <NAME>'],
      [['help', 'table', 'create'], 'turnstile table create [options] <NAME>'],
    ] as const) {
      const r = await run(...argv);
      expect({ code: r.code, stderr: r.stderr }, argv.join(' ')).toEqual({ code: 0, stderr: '' });
      expect(r.stdout.split('\n')[0], argv.join(' ')).toBe(`Usage: ${usage}`);
    }
  });
});
