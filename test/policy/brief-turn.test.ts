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

  it("a direct merge with optimize and gc riding it is brief; one with another shard's merge is not", () => {
    const d = new Driver(quietTable({ periodSecs: { optimize: 300, index: 0, gc: 300 } }, ['s0', 's1']));
    d.state.version = 5;
    d.state.dueAtMs.optimize = 1000;
    d.state.dueAtMs.gc = 1000;
    d.state.periodic.optimize.done = 4;
    d.state.periodic.gc.done = -1;
    d.state.lastCommitMs = { optimize: 40, gc: 40 };
    const small = (shard: string) => ({ type: 'demand' as const, shard, sealedThroughSeq: 1, revision: 1, bytes: 5000 });
    d.at(2000).send(small('s0'));
    expect(d.state.turn?.riders).toEqual(['optimize', 'gc']);
    expect(justGrantedBrief(d.state, 2000)).toBe(true);
    expect(justGrantedBrief(d.state, 2001)).toBe(false);

    // s1's and s2's seals come while s0 holds the turn: they commit together.
    const two = new Driver(quietTable({}, ['s0', 's1', 's2']));
    two.at(1000).send({ type: 'demand', shard: 's0', sealedThroughSeq: 1, revision: 1, bytes: 5000 });
    two.at(1010).send({ type: 'demand', shard: 's1', sealedThroughSeq: 1, revision: 1, bytes: 5000 });
    two.at(1020).send({ type: 'demand', shard: 's2', sealedThroughSeq: 1, revision: 1, bytes: 5000 });
    two.at(1100).send(committed('merge/s0', 1));
    expect(two.state.turn?.riders).toEqual(['merge/s2']);
    expect(justGrantedBrief(two.state, 1100)).toBe(false);
  });
});
