import { describe, expect, it } from 'vitest';
import { justGrantedBrief } from '../../src/policy';
import { emptyHistory, recordUnits, type UnitHistoryEntry } from '../../src/policy/unit-history';
import { commits, Driver, prepared, quietTable } from './helpers';

// Which granted turns the UI publisher leaves out of the search attributes
// (src/policy/brief-turn.ts): those expected to end before a list could show them.

const entry = (kind: UnitHistoryEntry['kind'], grantedAtMs: number, endedAtMs: number, outcome: UnitHistoryEntry['outcome'] = 'committed'): UnitHistoryEntry => ({
  unitId: kind,
  kind,
  startedAtMs: grantedAtMs - 10,
  grantedAtMs,
  endedAtMs,
  outcome,
  why: 'class 3',
  rows: 0,
  bytesRead: 0,
  bytesWritten: 0,
  cpuMs: 0,
  reservedBytes: 0,
});

/** A table whose optimize takes the turn at t = 1,000 (bumped, then planned). */
function optimizeGranted(): Driver {
  const d = new Driver(quietTable());
  d.send({ type: 'bump', bump: { target: { kind: 'optimize' }, class: 3, reason: 'test', expiresAtMs: 1e9 } });
  const ds = d.at(1000).send(prepared('optimize'));
  expect(commits(ds).map((c) => c.unit.id)).toEqual(['optimize']);
  return d;
}

describe('brief turns', () => {
  it("maintenance whose last commit of its kind took under a second is brief, in the instant it is granted", () => {
    const d = optimizeGranted();
    const fast = recordUnits(emptyHistory(0), [entry('optimize', 100, 180), entry('gc', 200, 5000)]);
    expect(justGrantedBrief(d.state, fast, 1000)).toBe(true);
    // A later activation that still sees it holding the turn publishes it.
    expect(justGrantedBrief(d.state, fast, 1001)).toBe(false);
  });

  it('the newest committed entry of the kind decides; failures and other kinds do not', () => {
    const d = optimizeGranted();
    const slowThenFast = recordUnits(emptyHistory(0), [entry('optimize', 100, 180), entry('optimize', 300, 1900), entry('gc', 2000, 2010), entry('optimize', 2100, 2120, 'failed')]);
    expect(justGrantedBrief(d.state, slowThenFast, 1000)).toBe(false);
    const fastThenSlow = recordUnits(emptyHistory(0), [entry('optimize', 100, 1500), entry('optimize', 2000, 2040)]);
    expect(justGrantedBrief(d.state, fastThenSlow, 1000)).toBe(true);
  });

  it('with no commit of its kind recorded, a maintenance turn is published', () => {
    const d = optimizeGranted();
    expect(justGrantedBrief(d.state, emptyHistory(0), 1000)).toBe(false);
    expect(justGrantedBrief(d.state, recordUnits(emptyHistory(0), [entry('gc', 100, 110)]), 1000)).toBe(false);
  });
});
