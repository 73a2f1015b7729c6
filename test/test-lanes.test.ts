import { expect, test } from 'vitest';
// @ts-expect-error: a plain-Node script without types
import { isFailureLine } from '../scripts/test-lanes.mjs';

test("the wait lane's lines repeated at the end: vitest's FAIL and × lines, coloured or not, and nothing else", () => {
  expect(isFailureLine(' FAIL  test/integration/idle.test.ts > a lost signal is merged')).toBe(true);
  expect(isFailureLine('   \x1b[31m×\x1b[39m a lost signal is merged 1200ms')).toBe(true);
  expect(isFailureLine('   ✓ a lost signal is merged 1200ms')).toBe(false);
  expect(isFailureLine(' Test Files  1 failed | 7 passed (8)')).toBe(false);
  expect(isFailureLine('merge FAILED later')).toBe(false);
});
