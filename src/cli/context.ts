import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, type Config } from '../config/config-schema';
import type { TableClient } from '../client/table-client';
import { ReadClient } from '../client/read-client';
import { connectionSecurity } from '../client/connection-security';
import { MAX_PAYLOAD_BYTES, payloadProblem } from '../messages/payload-limit';
import { UsageError } from '../messages/errors';
import { isS3, parseS3, resolveLoc } from '../storage/location';

// Everything at the edge: the config file (TURNSTILE_CONFIG) and environment are read
// here and handed to the pure loader; clients are made from the result.

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  let file: unknown;
  const p = env.TURNSTILE_CONFIG;
  if (p) {
    let text: string;
    try {
      text = fs.readFileSync(p, 'utf8');
    } catch (e) {
      throw new UsageError(`TURNSTILE_CONFIG: cannot read ${p}: ${(e as Error).message}`);
    }
    try {
      file = JSON.parse(text);
    } catch (e) {
      throw new UsageError(`TURNSTILE_CONFIG: ${p} is not valid JSON: ${(e as Error).message}`);
    }
  }
  const r = loadConfig(env, file);
  if (!r.ok) throw new UsageError(`config: ${r.error}`);
  const root = r.config.dataRoot;
  if (isS3(root) && !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(parseS3(root).bucket)) {
    throw new UsageError(`TURNSTILE_DATA: ${root} has no valid bucket name; accepted: a local directory or s3://BUCKET/PREFIX`);
  }
  return { ...r.config, dataRoot: isS3(root) ? resolveLoc(root) : path.resolve(root) };
}

/** A storage root that cannot be used (missing bucket, credentials refused, endpoint down). */
export class StorageUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StorageUnavailableError';
  }
}

/**
 * readConfig, then one request to the storage root, so a missing bucket, refused
 * credentials or an unreachable endpoint is one line at start, not a stack mid-run.
 */
export async function readCheckedConfig(env: NodeJS.ProcessEnv = process.env): Promise<Config> {
  const config = readConfig(env);
  const { storageAt } = await import('../storage/open-storage');
  const problem = await storageAt(config.dataRoot).check();
  if (problem) throw new StorageUnavailableError(problem);
  return config;
}

// Imported when first used: @temporalio/client takes ~400 ms to load (its proto root),
// which commands that only read (status) do without, through ReadClient.
export async function tableClient(config: Config, opts: { lazy?: boolean } = {}): Promise<TableClient> {
  const [{ connectClient }, { TableClient: Tables }] = await Promise.all([import('../client/connect'), import('../client/table-client')]);
  const client = await connectClient({ ...config.temporal, ...opts });
  return new Tables(client, config.temporal.taskQueue);
}

/** A read-only client for the same server: see read-client.ts. */
export const readClient = (config: Config): ReadClient => new ReadClient(config.temporal.address, config.temporal.namespace, connectionSecurity());

/** A JSON input file (a policy): unreadable, not JSON, or over the payload limits is bad input, refused before sending. */
export function readJsonFile(p: string, what: string): unknown {
  let value: unknown;
  try {
    // The size first: a huge file is refused without reading it.
    const bytes = fs.statSync(p).size;
    if (bytes > MAX_PAYLOAD_BYTES) throw new UsageError(`${what}: ${p} is ${bytes} bytes; accepted: at most ${MAX_PAYLOAD_BYTES} (Temporal's payload limit)`);
    value = JSON.parse(fs.readFileSync(p, 'utf8'));
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`${what}: cannot read JSON from ${p}: ${(e as Error).message.split('\n')[0]}`);
  }
  const tooLarge = payloadProblem(`${what}: ${p}`, value);
  if (tooLarge !== null) throw new UsageError(tooLarge);
  return value;
}
