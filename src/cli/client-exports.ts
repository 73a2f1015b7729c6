import { loadConfig, type Config } from '../config/config-schema';

// What another terminal must export to reach the same server and storage root as a
// `turnstile dev` (its clients are refused on any other root: storage-root-check.ts).

/** A value as one shell word: bare when it is plain, else single-quoted. */
export const shellWord = (value: string): string => (/^[A-Za-z0-9@%+=:,./_-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`);

/** `export NAME=VALUE` lines, in the order given. */
export const exportLines = (vars: Record<string, string>): string[] => Object.entries(vars).map(([name, value]) => `export ${name}=${shellWord(value)}`);

/**
 * The environment a client needs for the server, task queue and storage root of
 * `config` (`s3Env`: the endpoint and keys of an S3 root): the server and the root
 * always, the namespace and task queue when they are not the defaults.
 */
export function clientEnv(config: Config, s3Env: Record<string, string> = {}): Record<string, string> {
  const defaults = loadConfig({}, undefined);
  const base = defaults.ok ? defaults.config.temporal : { namespace: 'default', taskQueue: 'turnstile' };
  return {
    TEMPORAL_ADDRESS: config.temporal.address,
    ...(config.temporal.namespace === base.namespace ? {} : { TEMPORAL_NAMESPACE: config.temporal.namespace }),
    ...(config.temporal.taskQueue === base.taskQueue ? {} : { TURNSTILE_TASK_QUEUE: config.temporal.taskQueue }),
    TURNSTILE_DATA: config.dataRoot,
    ...s3Env,
  };
}
