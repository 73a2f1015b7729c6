// Byte sizes as operators write them: a plain byte count ("1073741824") or a number with
// a binary unit ("512MiB", "1.5 GiB"). Pure, so the config schema and the CLI share it.

const UNITS: Record<string, number> = { b: 1, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };

/** The accepted form, for error messages. */
export const BYTE_SIZE_FORM = 'a byte count > 0 or a size like 512MiB or 2GiB (units B, KiB, MiB, GiB, TiB)';

/** Bytes (a positive safe integer), or null when `input` is not a size. */
export function parseByteSize(input: unknown): number | null {
  if (typeof input === 'number') return Number.isSafeInteger(input) && input > 0 ? input : null;
  if (typeof input !== 'string') return null;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(input);
  if (!m) return null;
  const unit = UNITS[(m[2] || 'b').toLowerCase()];
  if (unit === undefined) return null;
  const bytes = Math.floor(Number(m[1]) * unit);
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : null;
}

/** 398458880 -> "380 MiB": whole MiB (GiB with one decimal from 10 GiB), for status lines. */
export function formatBytes(bytes: number): string {
  if (bytes >= 10 * 2 ** 30) return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
  return `${Math.ceil(bytes / 2 ** 20)} MiB`;
}
