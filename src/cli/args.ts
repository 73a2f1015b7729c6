// A tiny argv parser: positionals, `--name value`, `--name=value` and boolean flags.
// Every error is one line naming the flag and what it accepts.

export class UsageError extends Error {}

export interface Parsed {
  positionals: string[];
  flags: Record<string, string | true>;
}

export function parseArgs(argv: string[], booleans: string[] = []): Parsed {
  const positionals: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) {
      positionals.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    if (eq > 0) flags[name] = a.slice(eq + 1);
    else if (booleans.includes(name)) flags[name] = true;
    else {
      const v = argv[i + 1];
      if (v === undefined || v.startsWith('--')) throw new UsageError(`--${name}: needs a value`);
      flags[name] = v;
      i++;
    }
  }
  return { positionals, flags };
}

export function onlyFlags(p: Parsed, allowed: string[]): void {
  for (const f of Object.keys(p.flags)) {
    if (!allowed.includes(f)) throw new UsageError(`--${f}: unknown option; accepted: ${allowed.map((a) => `--${a}`).join(', ') || 'none'}`);
  }
}

export function str(p: Parsed, name: string): string | undefined {
  const v = p.flags[name];
  if (v === true) throw new UsageError(`--${name}: needs a value`);
  return v;
}

export function required(p: Parsed, name: string, accepted: string): string {
  const v = str(p, name);
  if (v === undefined) throw new UsageError(`--${name}: required (${accepted})`);
  return v;
}

export function int(p: Parsed, name: string, min: number, max: number, def?: number): number {
  const v = str(p, name);
  if (v === undefined) {
    if (def === undefined) throw new UsageError(`--${name}: required (an integer in [${min}, ${max}])`);
    return def;
  }
  const n = Number(v);
  if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name}: ${JSON.stringify(v)} is not an integer in [${min}, ${max}]`);
  }
  return n;
}

export function positional(p: Parsed, index: number, what: string): string {
  const v = p.positionals[index];
  if (v === undefined) throw new UsageError(`${what}: required`);
  return v;
}
