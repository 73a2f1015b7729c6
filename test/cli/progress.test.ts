import { describe, expect, it } from 'vitest';
import { progress } from '../../src/cli/progress';

// The progress line of long commands: shown in place on a terminal, never otherwise.

function stream(isTTY: boolean) {
  const written: string[] = [];
  return { isTTY, written, write: (t: string) => written.push(t) };
}

describe('progress', () => {
  it('writes nothing when stderr is not a terminal', () => {
    const s = stream(false);
    const p = progress(s);
    p.show('waiting');
    p.done();
    expect(p.active).toBe(false);
    expect(s.written).toEqual([]);
  });

  it('overwrites one line with the elapsed seconds on a terminal and clears it when done, for good', () => {
    const s = stream(true);
    let now = 1_000;
    const p = progress(s, () => now);
    p.show('generating 5 rows');
    now += 2_400;
    p.show('sealing 5 rows');
    p.done();
    p.show('a late tick');
    expect(s.written).toEqual(['\r\x1b[2Kgenerating 5 rows (0 s)', '\r\x1b[2Ksealing 5 rows (2 s)', '\r\x1b[2K']);
  });
});
