import net from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { S3Storage } from '../../src/storage/s3-storage';

// A server that takes the connection and never answers: every request gives up after
// the idle timeout (and the SDK's three attempts) instead of hanging.

let server: net.Server;
let port = 0;
const held: net.Socket[] = [];

beforeAll(async () => {
  server = net.createServer((socket) => void held.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});
afterAll(async () => {
  for (const s of held) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

it('a request to a server that never answers fails after the idle timeout, attempts included', { timeout: 20_000 }, async () => {
  const env = { AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`, AWS_ACCESS_KEY_ID: 'k', AWS_SECRET_ACCESS_KEY: 's' };
  const store = new S3Storage('s3://bucket/prefix', env, { connectMs: 1_000, idleMs: 400 });
  const err = await store.read('s3://bucket/prefix/file').then(
    () => null,
    (e: unknown) => e as Error,
  );
  expect(err?.message).toMatch(/timed out/);
  // Each of the SDK's three attempts connected, waited out the idle timeout and gave up.
  expect(held.length).toBe(3);
});
