import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACTIVE_MODE_SINCE, releaseBefore, releaseOf, workersWithoutActiveMode } from '../../src/client/capabilities';
import { buildIdOf } from '../../src/worker/build-id';
import { STALE_AFTER_MS, writeRecord, type WorkerRecord } from '../../src/worker/registry';
import { version } from '../../package.json';

// The mixed-version rule of adopted tables' active mode (src/client/capabilities.ts):
// which release a build id names, and which live workers predate active mode.

describe('releaseOf', () => {
  it('the release a build id starts with, and null for a build id without one', () => {
    expect(releaseOf('0.2.0-abcdef123456')).toBe('0.2.0');
    expect(releaseOf('0.3.0-0123456789ab')).toBe('0.3.0');
    expect(releaseOf('12.40.7-x')).toBe('12.40.7');
    for (const id of ['', 'abcdef123456', '0.2.0', '0.2-abc', 'v0.2.0-abc', 'x0.2.0-abc', '0.2.0abc', '0.2.0.1-abc', 'latest']) expect(releaseOf(id), id).toBeNull();
  });

  it("is the release of this build's own build ids", () => {
    expect(releaseOf(buildIdOf('some workflow bundle'))).toBe(version);
    expect(releaseBefore(version, ACTIVE_MODE_SINCE)).toBe(false);
  });
});

describe('releaseBefore', () => {
  it('compares the numbers, not the text', () => {
    expect(releaseBefore('0.2.0', '0.3.0')).toBe(true);
    expect(releaseBefore('0.3.0', '0.3.0')).toBe(false);
    expect(releaseBefore('0.3.1', '0.3.0')).toBe(false);
    expect(releaseBefore('0.10.0', '0.3.0')).toBe(false);
    expect(releaseBefore('0.3.0', '0.10.0')).toBe(true);
    expect(releaseBefore('0.2.99', '0.3.0')).toBe(true);
    expect(releaseBefore('1.0.0', '0.99.99')).toBe(false);
    expect(releaseBefore('0.3', '0.3.0')).toBe(false);
  });

  it('is a strict order: irreflexive, asymmetric, and total on different releases (property)', () => {
    const rel = fc.tuple(fc.nat({ max: 20 }), fc.nat({ max: 20 }), fc.nat({ max: 20 })).map((p) => p.join('.'));
    fc.assert(
      fc.property(rel, rel, rel, (a, b, c) => {
        expect(releaseBefore(a, a)).toBe(false);
        if (releaseBefore(a, b)) expect(releaseBefore(b, a)).toBe(false);
        if (a !== b) expect(releaseBefore(a, b) || releaseBefore(b, a)).toBe(true);
        if (releaseBefore(a, b) && releaseBefore(b, c)) expect(releaseBefore(a, c)).toBe(true);
        const key = (r: string) => r.split('.').map(Number);
        const [x, y] = [key(a), key(b)];
        const lexLess = x[0]! !== y[0]! ? x[0]! < y[0]! : x[1]! !== y[1]! ? x[1]! < y[1]! : x[2]! < y[2]!;
        expect(releaseBefore(a, b)).toBe(lexLess);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('workersWithoutActiveMode, by worker records (no Worker Deployment)', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-capabilities-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  const record = (identity: string, over: Partial<WorkerRecord>): WorkerRecord => ({
    identity,
    host: os.hostname(),
    pid: process.pid,
    taskQueue: 'q',
    budgetBytes: 1,
    cacheBytes: 0,
    reservedBytes: 0,
    claimBytes: 0,
    running: [],
    waiting: 0,
    startedAtMs: Date.now(),
    lastSeenMs: Date.now(),
    ...over,
  });
  // Not asked when there is no deployment to describe.
  const noClient = undefined as unknown as Client;

  it('lists the build ids of live workers older than active mode or without a release, each once, sorted', async () => {
    await writeRecord(root, record('w1', { buildId: '0.2.0-abcdef123456' }));
    await writeRecord(root, record('w2', { buildId: '0.2.0-abcdef123456' }));
    await writeRecord(root, record('w3', { buildId: '0.1.0-000000000000' }));
    await writeRecord(root, record('w4', { buildId: `${ACTIVE_MODE_SINCE}-0123456789ab` }));
    await writeRecord(root, record('w5', { buildId: '0.10.0-0123456789ab' }));
    await writeRecord(root, record('w6', { buildId: 'nightly' }));
    await writeRecord(root, record('w7', {}));
    expect(await workersWithoutActiveMode(noClient, null, root)).toEqual(['0.1.0-000000000000', '0.2.0-abcdef123456', 'nightly']);
  });

  it('leaves out records that are no longer live: stale, or of a process on this host that is gone', async () => {
    await writeRecord(root, record('stale', { buildId: '0.2.0-abcdef123456', lastSeenMs: Date.now() - STALE_AFTER_MS - 1000 }));
    await writeRecord(root, record('gone', { buildId: '0.2.0-111111111111', pid: 2 ** 22 + 12345 }));
    expect(await workersWithoutActiveMode(noClient, null, root)).toEqual([]);
    await writeRecord(root, record('live', { buildId: '0.2.0-abcdef123456' }));
    expect(await workersWithoutActiveMode(noClient, null, root)).toEqual(['0.2.0-abcdef123456']);
  });

  it('an empty data root (no _workers at all) has no old workers', async () => {
    expect(await workersWithoutActiveMode(noClient, null, path.join(root, 'nothing-here'))).toEqual([]);
  });
});
