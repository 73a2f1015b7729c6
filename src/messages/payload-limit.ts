// Temporal fails a payload over 2 MiB and warns from 512 KiB (notes/temporal-facts.md);
// no Turnstile message needs more than a few KiB or a few dozen keys. A payload over
// these limits is refused before it is sent, in one line, instead of by the server
// (a long gRPC error) or by a schema (one line listing thousands of unknown keys).

export const MAX_PAYLOAD_BYTES = 512 * 1024;
export const MAX_PAYLOAD_KEYS = 1000;

/** Object keys in `value`, counted without recursion (a hostile file may nest deeply); stops past `limit`. */
function countKeys(value: unknown, limit: number): number {
  let n = 0;
  const todo: unknown[] = [value];
  while (todo.length > 0 && n <= limit) {
    const v = todo.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) todo.push(...v);
    else {
      const keys = Object.keys(v);
      n += keys.length;
      for (const k of keys) todo.push((v as Record<string, unknown>)[k]);
    }
  }
  return n;
}

/** null, or one line naming `what` and the limit it exceeds. */
export function payloadProblem(what: string, value: unknown): string | null {
  const keys = countKeys(value, MAX_PAYLOAD_KEYS);
  if (keys > MAX_PAYLOAD_KEYS) return `${what}: more than ${MAX_PAYLOAD_KEYS} keys; accepted: at most ${MAX_PAYLOAD_KEYS}`;
  let bytes: number;
  try {
    bytes = new TextEncoder().encode(JSON.stringify(value) ?? '').length;
  } catch (e) {
    return `${what}: not serialisable as JSON (${(e as Error).message})`;
  }
  if (bytes > MAX_PAYLOAD_BYTES) return `${what}: ${bytes} bytes as JSON; accepted: at most ${MAX_PAYLOAD_BYTES} (Temporal's payload limit)`;
  return null;
}
