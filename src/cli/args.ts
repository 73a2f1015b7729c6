import { UsageError } from '../messages/errors';

// Values of parsed flags (commander parses argv, see program.ts), checked with one-line
// errors naming the flag and what it accepts.

export interface Parsed {
  positionals: string[];
  flags: Record<string, string | true>;
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
