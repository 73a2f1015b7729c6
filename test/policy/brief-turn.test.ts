import { describe, expect, it } from 'vitest';
import { justGrantedBrief } from '../../src/policy';
import { commits, committed, Driver, prepared, quietTable } from './helpers';

// Which granted turns the UI publisher leaves out of the search attributes
// (src/policy/brief-turn.ts): those expected to end before a list could show them.

const bumpOptimize = { type: 'bump' as const, bump: { target: { kind: 'optimize' as const }, class: 3 as const, reason: 'test', expiresAtMs: 1e9 } };

/** optimize bumped, planned at `atMs` and granted then; its commit ends `tookMs` later. */
function optimizeTurn(d: Driver, atMs: number, tookMs: number | null): void {
  d.at(atMs - 10).send(bumpOptimize);
  expect(commits(d.at(atMs).send(prepared('optimize'))).map((c) => c.unit.id)).toEqual(['optimize']);
  if (tookMs !== null) d.at(atMs + tookMs).send(committed('optimize', d.state.version + 1));
}

describe('brief turns', () => {
  it('a maintenance turn is brief in the instant it is granted when its last commit took under a second', () => {
    const d = new Driver(quietTable());
    optimizeTurn(d, 1000, 80);
    expect(d.state.lastCommitMs?.optimize).toBe(80);
    optimizeTurn(d, 5000, null);
    expect(justGrantedBrief(d.state, 5000)).toBe(true);
    // A later activation that still sees it holding the turn publishes it.
    expect(justGrantedBrief(d.state, 5001)).toBe(false);
  });

  it('the first turn of a kind, and one after a slow commit, are published', () => {
    const d = new Driver(quietTable());
    optimizeTurn(d, 1000, null);
    expect(justGrantedBrief(d.state, 1000)).toBe(false);
    d.at(2500).send(committed('optimize', 1));
    optimizeTurn(d, 5000, null);
    expect(d.state.lastCommitMs?.optimize).toBe(1500);
    expect(justGrantedBrief(d.state, 5000)).toBe(false);
  });
});
