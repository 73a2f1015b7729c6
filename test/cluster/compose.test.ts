import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { PROJECT_ROOT } from '../../src/util/project-paths';
import { DEV_DYNAMIC_CONFIG } from '../../src/server/dev-config';
import { renderDynamicConfig } from '../../src/cluster/node-config';
import { SEARCH_ATTRIBUTE_FLAGS } from '../../workflows/search-attributes';
import { ensureCluster } from './cluster-bins';

// docker-compose.yml, loaded by compose-go (the loader of Docker Compose itself: the
// Compose specification's schema, interpolation, anchors and merges) in
// tools/compose-check, describes the topology `turnstile cluster up` runs: the same
// services and versions, and a worker that scales.

interface ComposeService {
  image?: string;
  container_name?: string;
  ports?: { target: number; published?: string }[];
  deploy?: { replicas?: number };
  depends_on?: Record<string, { condition: string }>;
  environment?: Record<string, string | null>;
  entrypoint?: string[];
  networks?: Record<string, { aliases?: string[] } | null>;
}

let services: Record<string, ComposeService>;
let versions: { server: string; ui: string };

beforeAll(async () => {
  const m = await ensureCluster();
  const { 'compose-check': bin } = m.ensureProgram('compose-check');
  const r = spawnSync(bin!, [path.join(PROJECT_ROOT, 'docker-compose.yml')], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  services = (JSON.parse(r.stdout) as { services: Record<string, ComposeService> }).services;
  versions = { server: m.SERVER_VERSION.replace(/^v/, ''), ui: m.UI_VERSION.replace(/^v/, '') };
}, 600_000);

describe('docker-compose.yml (compose-go)', () => {
  test('has the local cluster topology: PostgreSQL 15, schema setup, two server nodes, UI, namespace setup, workers', () => {
    expect(Object.keys(services).sort()).toEqual(['namespace', 'postgresql', 'schema', 'temporal-1', 'temporal-2', 'temporal-ui', 'worker']);
    expect(services.postgresql!.image).toBe('postgres:15');
    for (const n of ['temporal-1', 'temporal-2']) {
      expect(services[n]!.image).toBe(`temporalio/server:${versions.server}`);
      expect(services[n]!.environment!.DB).toBe('postgres12');
      expect(services[n]!.depends_on!.schema!.condition).toBe('service_completed_successfully');
      // One client address for both nodes, as the local cluster's balancer.
      expect(services[n]!.networks!.default!.aliases).toContain('temporal');
    }
    for (const n of ['schema', 'namespace']) expect(services[n]!.image).toBe(`temporalio/admin-tools:${versions.server}`);
    expect(services['temporal-ui']!.image).toBe(`temporalio/ui:${versions.ui}`);
  });

  test('the worker is scalable: several replicas, no container name, no host port, the cluster address', () => {
    const w = services.worker!;
    expect(w.deploy!.replicas).toBeGreaterThanOrEqual(2);
    expect(w.container_name).toBeUndefined();
    expect(w.ports ?? []).toEqual([]);
    expect(w.environment!.TEMPORAL_ADDRESS).toBe('temporal:7233');
    expect(w.depends_on!.namespace!.condition).toBe('service_completed_successfully');
  });

  test("registers exactly Turnstile's search attributes, and the nodes get the dev server's dynamic config", () => {
    const script = services.namespace!.entrypoint!.join(' ');
    const listed = /for sa in ([^;]+);/.exec(script)![1]!.trim().split(/\s+/);
    expect(listed).toEqual(SEARCH_ATTRIBUTE_FLAGS);
    const file = fs.readFileSync(path.join(PROJECT_ROOT, 'deploy', 'dynamicconfig.yaml'), 'utf8');
    expect(file.replace(/^#.*\n/gm, '')).toBe(renderDynamicConfig(DEV_DYNAMIC_CONFIG));
  });
});
