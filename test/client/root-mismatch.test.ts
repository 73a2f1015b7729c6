import { describe, expect, it } from 'vitest';
import { rootMismatch } from '../../src/client/root-mismatch';
import { LIVE_POLL_MS } from '../../src/client/busy-retry';
import { identityWithRoot } from '../../src/messages/worker-identity';
import { storageRootOf } from '../../src/storage/storage-root';

// Whether a client may write, from the pollers of its task queue: refused only when live
// workers advertise roots and none is the client's.

const NOW = 1_700_000_000_000;
const S3 = storageRootOf('s3://turnstile/data', { AWS_ENDPOINT_URL: 'http://127.0.0.1:8333' });
const LOCAL = storageRootOf('/work/.turnstile/data', {});
const poller = (root: typeof S3 | null, agoMs = 1000, name = '1@h') => ({ identity: root ? identityWithRoot(name, root) : name, lastAccessMs: NOW - agoMs });

describe('rootMismatch', () => {
  it('refuses a client on another root with one line naming both', () => {
    const why = rootMismatch(LOCAL, 'turnstile', [poller(S3)], NOW);
    expect(why).toBe('TURNSTILE_DATA: /work/.turnstile/data is not the storage root of the workers on task queue turnstile; accepted: s3://turnstile/data (AWS_ENDPOINT_URL=http://127.0.0.1:8333), the root they use');
    expect(why).not.toContain('\n');
  });

  it('refuses the same bucket and prefix on another endpoint', () => {
    const elsewhere = storageRootOf('s3://turnstile/data/', { AWS_ENDPOINT_URL: 'http://127.0.0.1:9000' });
    expect(rootMismatch(elsewhere, 'q', [poller(S3)], NOW)).toMatch(/^TURNSTILE_DATA: s3:\/\/turnstile\/data \(AWS_ENDPOINT_URL=http:\/\/127\.0\.0\.1:9000\) is not .*; accepted: s3:\/\/turnstile\/data \(AWS_ENDPOINT_URL=http:\/\/127\.0\.0\.1:8333\), /);
  });

  it('accepts the root of any live worker, and names every root when none matches', () => {
    expect(rootMismatch(S3, 'q', [poller(LOCAL), poller(S3, 2000, '2@h')], NOW)).toBeNull();
    const other = storageRootOf('/srv/other', {});
    expect(rootMismatch(other, 'q', [poller(S3), poller(LOCAL, 2000, '2@h'), poller(S3, 3000, '3@h')], NOW)).toMatch(/; accepted: \/work\/\.turnstile\/data or s3:\/\/turnstile\/data \(.*\), the root they use$/);
  });

  it('says nothing when no live worker advertises a root: none polls, only stale or rootless pollers', () => {
    expect(rootMismatch(LOCAL, 'q', [], NOW)).toBeNull();
    expect(rootMismatch(LOCAL, 'q', [poller(S3, LIVE_POLL_MS + 1)], NOW)).toBeNull();
    expect(rootMismatch(LOCAL, 'q', [{ identity: identityWithRoot('1@h', S3), lastAccessMs: null }], NOW)).toBeNull();
    expect(rootMismatch(LOCAL, 'q', [poller(null)], NOW)).toBeNull();
    // A rootless (older) worker beside one that advertises: the advertised root decides.
    expect(rootMismatch(LOCAL, 'q', [poller(null), poller(S3, 1000, '2@h')], NOW)).not.toBeNull();
  });
});
