import type { Policy, TableState, Unit } from './types';

// step() never mutates its input: it works on a copy. A hand-written copy instead of
// structuredClone because that global is not guaranteed inside the Temporal workflow
// sandbox, and because `prepared` is opaque to the core (never mutated here), so it
// can be shared instead of deep-copied.

export const cloneUnit = (u: Unit): Unit => ({ ...u });

export function clonePolicy(p: Policy): Policy {
  return {
    ...p,
    maxConsecutiveTurns: { ...p.maxConsecutiveTurns },
    maxTurnWaitSecs: { ...p.maxTurnWaitSecs },
    stallSecs: { ...p.stallSecs },
    classes: { ...p.classes },
    basePriority: { ...p.basePriority },
    periodSecs: { ...p.periodSecs },
  };
}

export function cloneState(s: TableState): TableState {
  return {
    ...s,
    // The policy is only ever replaced, never edited, so it is shared.
    policy: s.policy,
    shards: s.shards.map((sh) => ({ ...sh })),
    units: s.units.map(cloneUnit),
    turn: s.turn
      ? { ...s.turn, ...(s.turn.riders ? { riders: [...s.turn.riders] } : {}), streakBefore: s.turn.streakBefore ? { ...s.turn.streakBefore } : null }
      : null,
    streak: s.streak ? { ...s.streak } : null,
    pausedKinds: [...s.pausedKinds],
    bumps: s.bumps.map((b) => ({ ...b, target: { ...b.target } })),
    // The observation is only ever replaced, never edited.
    ...(s.adopted ? { adopted: { ...s.adopted } } : {}),
    counters: { ...s.counters, turns: { ...s.counters.turns }, maxTurnWaitSecs: { ...s.counters.maxTurnWaitSecs } },
    dueAtMs: { ...s.dueAtMs },
    periodic: { optimize: { ...s.periodic.optimize }, index: { ...s.periodic.index }, gc: { ...s.periodic.gc } },
  };
}
