// A worker's CPU time, shared out among the activities that spent it. Node can only tell
// the CPU time of the whole process (process.cpuUsage: every thread, Lance's native ones
// and the dedup threads included), and a worker runs several activities at once. So the
// process's CPU is split at every moment an activity starts or stops measuring: what
// the process spent since the previous such moment goes in equal parts to the
// activities measuring throughout it (the set was the same all along). No timer: an
// interval ends only when the set changes, which splits exactly as sampling every
// interval would.
//
// Equal parts is the only split the numbers support: the process does not say which
// activity a thread worked for. It charges an activity that waits on storage as much as
// one that computes beside it, and CPU the process spends on other things while
// activities measure (workflow tasks, heartbeats, garbage collection) goes to them too;
// CPU spent while none measures goes to none. Activities therefore measure only while
// they work, not while they wait for admission or for an earlier preparation of their
// table (prepare-merge.ts).

/** Process CPU time so far, in microseconds. */
export type CpuSource = () => number;

const processCpu: CpuSource = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** One activity's claim on the shared CPU: measures while entered, accumulates across entries. */
export interface CpuShare {
  enter(): void;
  leave(): void;
  /** CPU ms shared to it so far (including the current interval when entered). */
  ms(): number;
}

export class CpuMeter {
  private members = 0;
  private lastCpu: number;
  /** CPU µs each member received since the meter began: a share is the difference over its stay. */
  private perMember = 0;

  constructor(private readonly cpu: CpuSource = processCpu) {
    this.lastCpu = cpu();
  }

  /** Splits the CPU spent since the last change among the current members. */
  private settle(): void {
    const now = this.cpu();
    if (this.members > 0) this.perMember += (now - this.lastCpu) / this.members;
    this.lastCpu = now;
  }

  /** A share, not yet entered. */
  share(): CpuShare {
    let us = 0;
    let since: number | null = null;
    const enter = (): void => {
      if (since !== null) return;
      this.settle();
      since = this.perMember;
      this.members++;
    };
    const leave = (): void => {
      if (since === null) return;
      this.settle();
      us += this.perMember - since;
      since = null;
      this.members--;
    };
    const ms = (): number => {
      if (since === null) return us / 1000;
      this.settle();
      return (us + this.perMember - since) / 1000;
    };
    return { enter, leave, ms };
  }

  /** Activities measuring right now. */
  get running(): number {
    return this.members;
  }
}

/** The process's meter: every activity of every worker in this process shares the one CPU count. */
export const processCpuMeter = new CpuMeter();
