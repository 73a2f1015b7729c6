import { expect, test } from 'vitest';
// @ts-expect-error: a plain-Node script without types
import { FailureReport, isFailureLine, ON_FAILURE } from '../scripts/test-lanes.mjs';

test("vitest's FAIL and × lines, coloured or not, and nothing else", () => {
  expect(isFailureLine(' FAIL  test/integration/idle.test.ts > a lost signal is merged')).toBe(true);
  expect(isFailureLine('   \x1b[31m×\x1b[39m a lost signal is merged 1200ms')).toBe(true);
  expect(isFailureLine('   ✓ a lost signal is merged 1200ms')).toBe(false);
  expect(isFailureLine(' Test Files  1 failed | 7 passed (8)')).toBe(false);
  expect(isFailureLine('merge FAILED later')).toBe(false);
});

test("a lane's report keeps its failure lines, the lines tests print on failure and vitest's Failed Tests section with the assertion, uncoloured, and nothing else", () => {
  const report = new FailureReport();
  const output = [
    ' ✓ test/policy/step.test.ts (3 tests) 12ms',
    '   \x1b[31m×\x1b[39m a lost signal is merged 1200ms',
    'stdout | test/integration/idle.test.ts > a lost signal is merged',
    'a line the test printed',
    `${ON_FAILURE}adopted s3: kills: commit gc: failed 12.0 s after the kill`,
    '\x1b[31m⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯\x1b[39m',
    '',
    ' FAIL  test/integration/idle.test.ts > a lost signal is merged',
    'AssertionError: expected 2 to be less than or equal to 1',
    ' ❯ test/integration/idle.test.ts:40:5',
    '',
    ' Test Files  1 failed | 7 passed (8)',
    '      Tests  1 failed | 20 passed (21)',
  ];
  for (const line of output) report.add(line);
  expect(report.lines).toEqual([
    '   × a lost signal is merged 1200ms',
    '[on failure] adopted s3: kills: commit gc: failed 12.0 s after the kill',
    '⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯',
    '',
    ' FAIL  test/integration/idle.test.ts > a lost signal is merged',
    'AssertionError: expected 2 to be less than or equal to 1',
    ' ❯ test/integration/idle.test.ts:40:5',
    '',
  ]);
});

test("a lane's report is bounded however much fails", () => {
  const report = new FailureReport();
  report.add(' Failed Tests 3 ');
  for (let i = 0; i < 10_000; i++) report.add(`stack line ${i}`);
  expect(report.lines.length).toBe(150);
});
