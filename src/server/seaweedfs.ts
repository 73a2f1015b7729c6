import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../util/project-paths';
import { ExitedBeforeServingError, spawnOwned, startAgainIfExited } from './owned-process';
import { freePort } from './ports';
import { sleep } from '../util/sleep';

// Starts SeaweedFS (`weed server`, built by scripts/ensure-seaweedfs.mjs) as a local
// S3-compatible server: master, volume, filer and S3 gateway in one process, every port
// free-picked (gRPC ports too: weed's default, HTTP + 10000, can collide or overflow),
// one identity from an s3.json, and one non-versioned bucket. Used by the tests and by
// `turnstile dev --storage s3`. Dies with us, like the Temporal dev server.

export interface SeaweedOptions {
  binary: string;
  /** Data directory (volumes, filer store); created. */
  dir: string;
  bucket: string;
  logFile?: string;
  accessKey?: string;
  secretKey?: string;
}

export interface Seaweed {
  /** http://127.0.0.1:PORT */
  endpoint: string;
  bucket: string;
  accessKey: string;
  secretKey: string;
  pid: number;
  /** The AWS environment that points Turnstile (and Lance) at this server. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

async function createBucket(env: Record<string, string>, bucket: string, alive: () => boolean, timeoutMs: number): Promise<void> {
  const { importS3Sdk, s3ClientConfig } = await import('../storage/s3-env');
  const { S3Client, CreateBucketCommand, HeadBucketCommand } = await importS3Sdk();
  const s3 = new S3Client({ ...s3ClientConfig(env), maxAttempts: 1 });
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  try {
    while (Date.now() < deadline) {
      if (!alive()) throw new ExitedBeforeServingError('weed server exited before serving S3');
      try {
        await s3.send(new CreateBucketCommand({ Bucket: bucket })).catch((e: Error) => {
          if (!/BucketAlready/.test(e.name)) throw e;
        });
        await s3.send(new HeadBucketCommand({ Bucket: bucket }));
        return;
      } catch (e) {
        last = e;
        await sleep(300);
      }
    }
  } finally {
    s3.destroy();
  }
  throw new Error(`SeaweedFS S3 at ${env.AWS_ENDPOINT_URL} did not serve within ${timeoutMs} ms: ${String(last)}`);
}

/** Started again with fresh ports if weed exits before serving (a port taken meanwhile). */
export function startSeaweedfs(opts: SeaweedOptions): Promise<Seaweed> {
  return startAgainIfExited(() => startOnce(opts));
}

async function startOnce(opts: SeaweedOptions): Promise<Seaweed> {
  const accessKey = opts.accessKey ?? 'turnstile';
  const secretKey = opts.secretKey ?? 'turnstile-secret';
  fs.mkdirSync(opts.dir, { recursive: true });
  const config = path.join(opts.dir, 's3.json');
  fs.writeFileSync(config, JSON.stringify({ identities: [{ name: 'turnstile', credentials: [{ accessKey, secretKey }], actions: ['Admin', 'Read', 'List', 'Tagging', 'Write'] }] }));
  const p: number[] = [];
  for (let i = 0; i < 8; i++) p.push(await freePort());
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc] = p as [number, number, number, number, number, number, number, number];
  const args = [
    'server',
    `-dir=${opts.dir}`,
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-master.port=${master}`,
    `-master.port.grpc=${masterGrpc}`,
    `-volume.port=${volume}`,
    `-volume.port.grpc=${volumeGrpc}`,
    `-filer.port=${filer}`,
    `-filer.port.grpc=${filerGrpc}`,
    '-s3',
    `-s3.port=${s3}`,
    `-s3.port.grpc=${s3Grpc}`,
    `-s3.config=${config}`,
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    '-master.volumeSizeLimitMB=64',
    '-volume.max=0',
    '-master.telemetry=false',
  ];
  // weed takes long to stop on SIGTERM (it flushes and deregisters); its data is
  // scratch, so stop() kills it outright.
  const { child, killNow } = spawnOwned(opts.binary, args, opts.logFile);
  const endpoint = `http://127.0.0.1:${s3}`;
  const env = { AWS_ENDPOINT_URL: endpoint, AWS_ACCESS_KEY_ID: accessKey, AWS_SECRET_ACCESS_KEY: secretKey, AWS_REGION: 'us-east-1' };
  try {
    await createBucket(env, opts.bucket, () => child.exitCode === null && child.signalCode === null, 60_000);
  } catch (e) {
    killNow();
    process.off('exit', killNow);
    throw e;
  }
  return {
    endpoint,
    bucket: opts.bucket,
    accessKey,
    secretKey,
    pid: child.pid!,
    env,
    async stop() {
      process.off('exit', killNow);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      killNow();
      await exited;
    },
  };
}

/** The `weed` binary: WEED_PATH, or built into the cache on first use (scripts/ensure-seaweedfs.mjs). */
export async function seaweedBinary(): Promise<string> {
  const mod = (await import(path.join(PROJECT_ROOT, 'scripts', 'ensure-seaweedfs.mjs'))) as { ensureSeaweedfs(): string };
  return mod.ensureSeaweedfs();
}

/** A SeaweedFS of our own under `dir`, with this process (and the workers it spawns) pointed at it. */
export async function startOwnSeaweedfs(dir: string, bucket: string): Promise<Seaweed> {
  const s3 = await startSeaweedfs({ binary: await seaweedBinary(), dir: path.join(dir, 'seaweedfs'), bucket, logFile: path.join(dir, 'seaweedfs.log') });
  Object.assign(process.env, s3.env);
  return s3;
}
