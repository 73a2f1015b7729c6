import { describe, expect, it } from 'vitest';
import { renderDevConfig, type DevPorts } from '../../src/server/dev-config';

const ports: DevPorts = {
  frontend: 7233, frontendMembership: 7234, frontendHttp: 7235, history: 7236, historyMembership: 7237,
  matching: 7238, matchingMembership: 7239, worker: 7240, workerMembership: 7241, metrics: 7242,
};
const base = { dbFile: '/tmp/t.db', ports, dynamicConfigFile: '/tmp/dc.yaml', synchronous: 'normal' as const };

describe('the dev server config', () => {
  it('serves Go pprof only when a port is asked for, inside the global block', () => {
    expect(renderDevConfig(base)).not.toContain('pprof');
    const withPprof = renderDevConfig({ ...base, pprofPort: 7936 });
    expect(withPprof).toContain('global:\n  pprof:\n    port: 7936\n  membership:\n');
  });
});
