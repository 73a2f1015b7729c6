import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeRoot, normaliseEndpoint, parseRootKey, rootKey, sameRoot, storageRootOf } from '../../src/storage/storage-root';
import { canonicalLocalPath } from '../../src/storage/reached-root';
import { identityWithRoot, MAX_IDENTITY_CHARS, rootOfIdentity } from '../../src/messages/worker-identity';

// Two processes that reach the same storage root must describe it alike, whatever
// spelling each was given; different roots (another directory, another prefix, the same
// bucket on another endpoint) must differ.

const at = (dataRoot: string, env: NodeJS.ProcessEnv = {}) => storageRootOf(dataRoot, env);

describe('storageRootOf and sameRoot', () => {
  it('local roots: relative, `..`, `.` and trailing slashes name one absolute path', () => {
    const cwd = process.cwd();
    expect(at('.turnstile/data')).toEqual({ location: path.join(cwd, '.turnstile', 'data'), endpoint: null });
    expect(sameRoot(at('.turnstile/data'), at(`${cwd}/x/../.turnstile/./data/`))).toBe(true);
    expect(sameRoot(at('/srv/a'), at('/srv/b'))).toBe(false);
    // The AWS environment does not change a local root.
    expect(sameRoot(at('/srv/a', { AWS_ENDPOINT_URL: 'http://127.0.0.1:8333' }), at('/srv/a'))).toBe(true);
  });

  it('S3 roots: doubled and trailing slashes do not matter, the prefix and the endpoint do', () => {
    const e = { AWS_ENDPOINT_URL: 'http://127.0.0.1:8333' };
    expect(at('s3://b/data//x/', e)).toEqual({ location: 's3://b/data/x', endpoint: 'http://127.0.0.1:8333' });
    expect(sameRoot(at('s3://b/data', e), at('s3://b/data/', e))).toBe(true);
    expect(sameRoot(at('s3://b/data', e), at('s3://b/other', e))).toBe(false);
    expect(sameRoot(at('s3://b/data', e), at('s3://b/data', { AWS_ENDPOINT_URL: 'http://127.0.0.1:9000' }))).toBe(false);
    expect(sameRoot(at('s3://b/data', e), at('s3://b/data'))).toBe(false);
    // AWS_ENDPOINT_URL_S3 wins over AWS_ENDPOINT_URL, as in the S3 client (s3-env.ts).
    expect(at('s3://b/data', { AWS_ENDPOINT_URL_S3: 'http://s3.local:1', AWS_ENDPOINT_URL: 'http://other:2' }).endpoint).toBe('http://s3.local:1');
    // A local root never equals an S3 one.
    expect(sameRoot(at('/b/data'), at('s3://b/data'))).toBe(false);
  });

  it('endpoints: scheme and host case, the default port and trailing slashes do not matter', () => {
    expect(normaliseEndpoint('HTTP://Seaweed.Local:80/')).toBe('http://seaweed.local');
    expect(normaliseEndpoint(' https://s3.example.com:443 ')).toBe('https://s3.example.com');
    expect(normaliseEndpoint('http://127.0.0.1:8333')).toBe('http://127.0.0.1:8333');
    expect(normaliseEndpoint('not a url/')).toBe('not a url');
  });

  it('keys round-trip, and messages show the root as the variables that select it', () => {
    for (const r of [at('/srv/my data'), at('s3://b/p'), at('s3://b/p', { AWS_ENDPOINT_URL: 'http://127.0.0.1:8333' })]) expect(parseRootKey(rootKey(r))).toEqual(r);
    expect(parseRootKey('not a root')).toBeNull();
    expect(describeRoot(at('/srv/a'))).toBe('/srv/a');
    expect(describeRoot(at('s3://b/p', { AWS_ENDPOINT_URL: 'http://127.0.0.1:8333' }))).toBe('s3://b/p (AWS_ENDPOINT_URL=http://127.0.0.1:8333)');
    expect(describeRoot(at('s3://b/p'))).toBe('s3://b/p (AWS S3, no AWS_ENDPOINT_URL)');
  });
});

describe('worker identities carry the root', () => {
  it('as one word that reads back as the same root', () => {
    const roots = [at('/srv/my data/100%'), at('s3://b/p', { AWS_ENDPOINT_URL: 'http://127.0.0.1:8333' })];
    for (const r of roots) {
      const identity = identityWithRoot('4242@host/w0', r);
      expect(identity).not.toMatch(/\s/);
      expect(identity.startsWith('4242@host/w0;root=')).toBe(true);
      expect(rootOfIdentity(identity)).toEqual(r);
    }
    expect(identityWithRoot('1@h', at('/srv/a'))).toBe('1@h;root=/srv/a');
  });

  it('identities without a root (older workers, other programs) advertise none', () => {
    expect(rootOfIdentity('4242@host')).toBeNull();
    expect(rootOfIdentity('x;root=%E0%A4%A')).toBeNull();
    expect(rootOfIdentity('x;root=relative/path')).toBeNull();
  });

  it('a root too long for the server\'s identity limit is left out rather than refused at poll', () => {
    const long = at(`/${'d'.repeat(MAX_IDENTITY_CHARS)}`);
    expect(identityWithRoot('1@h', long)).toBe('1@h');
  });
});

describe('canonicalLocalPath', () => {
  it('resolves symbolic links in the part that exists and keeps the rest as written', () => {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'turnstile-root-')));
    try {
      fs.mkdirSync(path.join(dir, 'real'));
      fs.symlinkSync(path.join(dir, 'real'), path.join(dir, 'link'));
      expect(canonicalLocalPath(path.join(dir, 'link'))).toBe(path.join(dir, 'real'));
      expect(canonicalLocalPath(path.join(dir, 'link', 'not', 'yet'))).toBe(path.join(dir, 'real', 'not', 'yet'));
      expect(canonicalLocalPath(path.join(dir, 'real', '..', 'link', 'data'))).toBe(path.join(dir, 'real', 'data'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
