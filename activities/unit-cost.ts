import type { UnitCost } from './contract';
import { processCpuMeter, type CpuMeter, type CpuShare } from './cpu-meter';
import type { ActivityDeps } from './deps';

// What one activity cost (UnitCost in its result): bytes it read and wrote, counted
// where it reads and writes files itself (and, for Lance's commits, read from the
// versions they made: src/storage/lance-commit-bytes.ts), and its share of the worker's
// CPU (cpu-meter.ts). What counts and what does not: docs/internals.md, "What a unit's
// cost counts". Metadata (table.json, SEALED.json, GC.json, listings, manifests) is
// not counted: it is small next to the data and the same for every unit of a kind.

export class CostMeter {
  bytesRead = 0;
  bytesWritten = 0;
  private readonly cpu: CpuShare;

  constructor(meter: CpuMeter = processCpuMeter) {
    this.cpu = meter.share();
  }

  read(bytes: number): void {
    this.bytesRead += bytes;
  }

  wrote(bytes: number): void {
    this.bytesWritten += bytes;
  }

  /** Runs `fn` with this activity counted among those sharing the CPU. */
  async during<T>(fn: () => Promise<T>): Promise<T> {
    this.cpu.enter();
    try {
      return await fn();
    } finally {
      this.cpu.leave();
    }
  }

  result(): UnitCost {
    return { bytesRead: this.bytesRead, bytesWritten: this.bytesWritten, cpuMs: Math.round(this.cpu.ms() * 100) / 100 };
  }
}

export const costMeter = (deps: ActivityDeps): CostMeter => new CostMeter(deps.cpuMeter);

/** `fn`'s result with what it cost: the common case of an activity measured from start to end. */
export async function withCost<R extends object>(deps: ActivityDeps, fn: (cost: CostMeter) => Promise<R>): Promise<R & { cost: UnitCost }> {
  const cost = costMeter(deps);
  const r = await cost.during(() => fn(cost));
  return { ...r, cost: cost.result() };
}
