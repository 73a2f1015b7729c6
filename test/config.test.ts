import { describe, expect, test } from 'vitest';
import { loadConfig } from '../src/config/config-schema';
import { applyOverride, combineOverrides, defaultPolicy, parsePolicy, POLICY_DOCS } from '../src/config/policy-schema';

describe('policy schema', () => {
  test('every key has a default and documentation', () => {
    const p = defaultPolicy();
    expect(Object.keys(POLICY_DOCS).sort()).toEqual(Object.keys(p).sort());
    expect(p.maxTurnWaitSecs.optimize).toBe(120);
    expect(p.hardBacklog).toBeGreaterThan(p.softBacklog);
  });

  test('unknown keys and out-of-range values are named in one line', () => {
    const r = parsePolicy({ bogus: 1, maxTurnWaitSecs: { optimize: -3 } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toContain('bogus: unknown key');
    expect(r.error).toContain('maxTurnWaitSecs.optimize: must be an integer in [1, 86400]');
    expect(r.error).not.toContain('\n');
  });

  test('an override merges per-kind maps key by key', () => {
    const r = applyOverride(defaultPolicy(), { maxTurnWaitSecs: { optimize: 5 } });
    expect(r.ok && r.policy.maxTurnWaitSecs).toEqual({ ...defaultPolicy().maxTurnWaitSecs, optimize: 5 });
  });

  test('hardBacklog must exceed softBacklog', () => {
    const r = applyOverride(defaultPolicy(), { softBacklog: 5000 });
    expect(r).toEqual({ ok: false, error: 'hardBacklog: must be greater than softBacklog (5000)' });
  });
});

test('overrides combine key by key, the later winning, per-kind maps merged', () => {
  const combined = combineOverrides({ maxTurnWaitSecs: { optimize: 7 }, softBacklog: 2 }, { maxTurnWaitSecs: { merge: 45 }, softBacklog: 3 });
  expect(combined).toEqual({ maxTurnWaitSecs: { optimize: 7, merge: 45 }, softBacklog: 3 });
  expect(combineOverrides(undefined, { hardBacklog: 9 })).toEqual({ hardBacklog: 9 });
  // Layering the combination equals layering the two in turn.
  const a = applyOverride(defaultPolicy(), combined);
  const b1 = applyOverride(defaultPolicy(), { maxTurnWaitSecs: { optimize: 7 }, softBacklog: 2 });
  const b = b1.ok ? applyOverride(b1.policy, { maxTurnWaitSecs: { merge: 45 }, softBacklog: 3 }) : b1;
  expect(a).toEqual(b);
});

describe('config loader', () => {
  test('environment wins over the file; defaults fill the rest', () => {
    const r = loadConfig({ TEMPORAL_ADDRESS: 'h:1', TURNSTILE_DATA: '/d' }, { temporal: { address: 'x:2', namespace: 'ns' } });
    expect(r.ok && r.config.temporal).toEqual({ address: 'h:1', namespace: 'ns', taskQueue: 'turnstile', deploymentName: 'turnstile' });
    expect(r.ok && r.config.dataRoot).toBe('/d');
    expect(r.ok && r.config.policy).toEqual(defaultPolicy());
  });

  test('unknown keys in the file are errors', () => {
    expect(loadConfig({}, { temporal: { adress: 'x' } })).toEqual({ ok: false, error: 'temporal.adress: unknown key' });
    expect(loadConfig({}, { policy: { softBacklog: -1 } })).toEqual({ ok: false, error: 'policy.softBacklog: must be an integer in [0, 1000000]' });
  });

  test('worker memory budget: byte counts and binary units, from the file or TURNSTILE_WORKER_MEMORY', () => {
    const budget = (env: Record<string, string>, file?: unknown) => {
      const r = loadConfig(env, file);
      return r.ok ? r.config.worker.memoryBudgetBytes : r.error;
    };
    expect(budget({})).toBeUndefined(); // the worker then takes half the machine's memory
    expect(budget({ TURNSTILE_WORKER_MEMORY: '512MiB' })).toBe(512 * 2 ** 20);
    expect(budget({ TURNSTILE_WORKER_MEMORY: '2GiB' })).toBe(2 * 2 ** 30);
    expect(budget({ TURNSTILE_WORKER_MEMORY: '1073741824' })).toBe(2 ** 30);
    expect(budget({}, { worker: { memoryBudgetBytes: 1000 } })).toBe(1000);
    expect(budget({ TURNSTILE_WORKER_MEMORY: '1.5 GiB' }, { worker: { memoryBudgetBytes: 1000 } })).toBe(1.5 * 2 ** 30);
    for (const bad of ['0', '-1', '12XB', 'lots', '']) {
      const got = budget({}, { worker: { memoryBudgetBytes: bad } });
      expect(got).toBe(
        `worker.memoryBudgetBytes: must be a byte count > 0 or a size like 512MiB or 2GiB (units B, KiB, MiB, GiB, TiB) (env TURNSTILE_WORKER_MEMORY); got ${JSON.stringify(bad)}`,
      );
    }
    expect(budget({}, { worker: { memoryBudgetBytes: -1 } })).toContain('worker.memoryBudgetBytes: must be a byte count > 0');
  });

  test('dedup threads: absent (the worker picks from its cores), 0..16 from the file or TURNSTILE_DEDUP_THREADS, anything else named with its range', () => {
    const threads = (env: Record<string, string>, file?: unknown) => {
      const r = loadConfig(env, file);
      return r.ok ? r.config.worker.dedupThreads : r.error;
    };
    expect(threads({})).toBeUndefined();
    expect(threads({ TURNSTILE_DEDUP_THREADS: '0' })).toBe(0);
    expect(threads({}, { worker: { dedupThreads: 3 } })).toBe(3);
    expect(threads({ TURNSTILE_DEDUP_THREADS: '2' }, { worker: { dedupThreads: 3 } })).toBe(2);
    for (const bad of ['-1', '17', '1.5', 'two']) expect(threads({ TURNSTILE_DEDUP_THREADS: bad })).toMatch(/^worker\.dedupThreads: must be an integer in \[0, 16\]/);
    expect(threads({}, { worker: { dedupThreads: 2.5 } })).toMatch(/^worker\.dedupThreads: must be an integer in \[0, 16\]/);
  });

  test('cached workflows: 800 unless the file or TURNSTILE_MAX_CACHED_WORKFLOWS says otherwise; anything outside [2, 100000] named with its range', () => {
    const cached = (env: Record<string, string>, file?: unknown) => {
      const r = loadConfig(env, file);
      return r.ok ? r.config.worker.maxCachedWorkflows : r.error;
    };
    expect(cached({})).toBe(800);
    expect(cached({ TURNSTILE_MAX_CACHED_WORKFLOWS: '5000' })).toBe(5000);
    expect(cached({}, { worker: { maxCachedWorkflows: 300 } })).toBe(300);
    for (const bad of ['0', '1', '100001', '1.5', 'many']) expect(cached({ TURNSTILE_MAX_CACHED_WORKFLOWS: bad })).toMatch(/^worker\.maxCachedWorkflows: must be an integer in \[2, 100000\]/);
  });

  test('workflow stack traces: off unless the file or TURNSTILE_WORKFLOW_STACK_TRACES turns them on; anything but a boolean named', () => {
    const stacks = (env: Record<string, string>, file?: unknown) => {
      const r = loadConfig(env, file);
      return r.ok ? r.config.worker.workflowStackTraces : r.error;
    };
    expect(stacks({})).toBe(false);
    expect(stacks({ TURNSTILE_WORKFLOW_STACK_TRACES: '1' })).toBe(true);
    expect(stacks({ TURNSTILE_WORKFLOW_STACK_TRACES: 'true' })).toBe(true);
    expect(stacks({ TURNSTILE_WORKFLOW_STACK_TRACES: '0' }, { worker: { workflowStackTraces: true } })).toBe(false);
    expect(stacks({}, { worker: { workflowStackTraces: true } })).toBe(true);
    for (const bad of ['yes', '2']) expect(stacks({ TURNSTILE_WORKFLOW_STACK_TRACES: bad })).toMatch(/^worker\.workflowStackTraces: must be true or false/);
    expect(stacks({}, { worker: { workflowStackTraces: 'on' } })).toMatch(/^worker\.workflowStackTraces: must be true or false/);
  });
});
