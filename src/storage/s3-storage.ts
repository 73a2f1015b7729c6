import type { S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { insideLoc, parseS3, resolveLoc } from './location';
import { StorageEscapeError, finishedBytes, type BytesSource, type Entry, type PatchedBytes, type Storage, type Versioned } from './storage';
import { importS3Sdk, S3_TIMEOUTS, s3ClientConfig } from './s3-env';

// The S3 backend (any S3-compatible server: AWS, SeaweedFS, MinIO). Objects are atomic
// on S3: a reader sees a whole object or none, so no temp names are needed. Claims use
// conditional writes: If-None-Match: * (412 when the key exists) and If-Match: <etag>
// (412 when it changed, 404 when it is gone); 409 is S3's answer to two conditional
// writes of one key in flight at once, and means the same: someone else won.
// The SDK is loaded on first use: CLI commands on local storage never pay for it.

type Sdk = typeof import('@aws-sdk/client-s3');

let sdk: Promise<Sdk> | undefined;
const loadSdk = (): Promise<Sdk> => (sdk ??= importS3Sdk());

const status = (err: unknown): number | undefined => (err as S3ServiceException | undefined)?.$metadata?.httpStatusCode;
const isMissing = (err: unknown): boolean => status(err) === 404 || (err as Error | undefined)?.name === 'NoSuchKey' || (err as Error | undefined)?.name === 'NotFound';
const isConflict = (err: unknown): boolean => status(err) === 412 || status(err) === 409;

const body = (bytes: Uint8Array | string): Uint8Array => (typeof bytes === 'string' ? Buffer.from(bytes) : bytes);

export class S3Storage implements Storage {
  readonly kind = 's3' as const;
  private readonly bucket: string;
  private client: Promise<{ s3: S3Client; sdk: Sdk }> | undefined;

  /** `env`: where endpoint and credentials are read (tests point one store elsewhere); `timeouts`: tests shorten them. */
  constructor(
    readonly root: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly timeouts = S3_TIMEOUTS,
  ) {
    this.bucket = parseS3(root).bucket;
    if (!this.bucket) throw new Error(`${root}: no bucket; expected s3://BUCKET/PREFIX`);
  }

  private connect(): Promise<{ s3: S3Client; sdk: Sdk }> {
    return (this.client ??= loadSdk().then((m) => ({ s3: new m.S3Client(s3ClientConfig(this.env, this.timeouts)), sdk: m })));
  }

  /** The object key of a location under the root; anything else is refused. */
  private key(loc: string): string {
    const r = resolveLoc(loc);
    if (r !== this.root && !insideLoc(this.root, r)) throw new StorageEscapeError(this.root, loc);
    const { bucket, key } = parseS3(r);
    if (bucket !== this.bucket || !key) throw new StorageEscapeError(this.root, loc);
    return key;
  }

  async readVersioned(loc: string): Promise<Versioned | null> {
    const Key = this.key(loc);
    const { s3, sdk: m } = await this.connect();
    try {
      const r = await s3.send(new m.GetObjectCommand({ Bucket: this.bucket, Key }));
      const bytes = Buffer.from(await r.Body!.transformToByteArray());
      return { bytes, etag: r.ETag ?? '' };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async read(loc: string): Promise<Buffer | null> {
    return (await this.readVersioned(loc))?.bytes ?? null;
  }

  async stat(loc: string): Promise<{ size: number; mtimeMs: number } | null> {
    const Key = this.key(loc);
    const { s3, sdk: m } = await this.connect();
    try {
      const r = await s3.send(new m.HeadObjectCommand({ Bucket: this.bucket, Key }));
      return { size: r.ContentLength ?? 0, mtimeMs: r.LastModified?.getTime() ?? 0 };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async entriesChangedMs(): Promise<number | null> {
    return null;
  }

  private async conditionalPut(loc: string, bytes: Uint8Array | string, cond: { IfNoneMatch?: string; IfMatch?: string }): Promise<boolean> {
    const Key = this.key(loc);
    const { s3, sdk: m } = await this.connect();
    try {
      await s3.send(new m.PutObjectCommand({ Bucket: this.bucket, Key, Body: body(bytes), ...cond }));
      return true;
    } catch (err) {
      if (isConflict(err) || (cond.IfMatch && isMissing(err))) return false;
      throw err;
    }
  }

  async putIfAbsent(loc: string, bytes: BytesSource): Promise<boolean> {
    return this.conditionalPut(loc, typeof bytes === 'function' ? await finishedBytes(await bytes()) : bytes, { IfNoneMatch: '*' });
  }

  putIfMatch(loc: string, bytes: Uint8Array | string, etag: string | null): Promise<boolean> {
    return this.conditionalPut(loc, bytes, etag === null ? { IfNoneMatch: '*' } : { IfMatch: etag });
  }

  async put(loc: string, bytes: Uint8Array | string | PatchedBytes): Promise<void> {
    const Key = this.key(loc);
    const { s3, sdk: m } = await this.connect();
    await s3.send(new m.PutObjectCommand({ Bucket: this.bucket, Key, Body: body(await finishedBytes(bytes)) }));
  }

  async list(dir: string, opts: { limit?: number } = {}): Promise<Entry[]> {
    const r = resolveLoc(dir);
    const Prefix = r === this.root && !parseS3(r).key ? '' : `${this.key(r)}/`;
    const { s3, sdk: m } = await this.connect();
    const out: Entry[] = [];
    let ContinuationToken: string | undefined;
    do {
      const page = await s3.send(new m.ListObjectsV2Command({ Bucket: this.bucket, Prefix, Delimiter: '/', ContinuationToken, MaxKeys: opts.limit }));
      for (const p of page.CommonPrefixes ?? []) if (p.Prefix) out.push({ name: p.Prefix.slice(Prefix.length, -1), isDir: true });
      for (const o of page.Contents ?? []) if (o.Key && o.Key !== Prefix) out.push({ name: o.Key.slice(Prefix.length), isDir: false });
      ContinuationToken = page.IsTruncated && !(opts.limit && out.length >= opts.limit) ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
    return out;
  }

  async delete(loc: string): Promise<void> {
    const Key = this.key(loc);
    const { s3, sdk: m } = await this.connect();
    await s3.send(new m.DeleteObjectCommand({ Bucket: this.bucket, Key }));
  }

  async ensureDir(): Promise<void> {}

  async check(): Promise<string | null> {
    const { s3, sdk: m } = await this.connect();
    const endpoint = s3ClientConfig(this.env).endpoint ?? 'AWS S3';
    try {
      await s3.send(new m.HeadBucketCommand({ Bucket: this.bucket }));
      return null;
    } catch (err) {
      const code = status(err);
      if (code === 404) return `TURNSTILE_DATA=${this.root}: bucket ${this.bucket} does not exist at ${endpoint}`;
      if (code === 403 || code === 401) return `TURNSTILE_DATA=${this.root}: access to bucket ${this.bucket} at ${endpoint} denied: check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY`;
      if (code === 400 || code === 301) return `TURNSTILE_DATA=${this.root}: bucket ${this.bucket} at ${endpoint} answered ${code}: check AWS_REGION and AWS_ENDPOINT_URL`;
      if (code === undefined) return `TURNSTILE_DATA=${this.root}: S3 endpoint ${endpoint} unreachable (${(err as Error).message.split('\n')[0]}): check AWS_ENDPOINT_URL`;
      return `TURNSTILE_DATA=${this.root}: bucket ${this.bucket} at ${endpoint}: HTTP ${code} ${(err as Error).name}`;
    }
  }
}

