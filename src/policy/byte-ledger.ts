// Admission by reserved bytes (invariant 6), the pure part: one worker's byte ledger.
// The worker feeds it events (a unit or a poll asks for bytes, a reservation ends) and
// carries out what it answers (start the admitted, refuse the impossible). No I/O, no
// clocks: the property tests drive it with arbitrary event sequences.
//
// The rule: held bytes never exceed the budget, and requests are admitted strictly in
// arrival order, so a request that does not fit yet blocks every later one, however
// small. That is the no-starvation bound: a big unit waits only for the reservations
// that were admitted before it to end, never for a stream of small ones that arrive
// after it. (The price: headroom a small later unit could use stays idle meanwhile.)
// A request converted from a poll claim (`convert`) goes to the front: it already won a
// task slot, and the claim it gives back was part of the wait.

export interface Reservation {
  id: string;
  bytes: number;
}

export interface Ledger {
  budgetBytes: number;
  /** Admitted reservations, in admission order. */
  held: Reservation[];
  /** Requests that do not fit yet, oldest first (a converted one may be put first). */
  waiting: Reservation[];
}

export type AdmissionEvent =
  | { type: 'request'; id: string; bytes: number }
  /** Ends a held reservation, or withdraws a waiting request; an unknown id is a no-op. */
  | { type: 'release'; id: string }
  /**
   * A held poll claim becomes the reservation of the unit that came through it: shrunk
   * in place when the unit needs no more than the claim, else the claim is given back
   * and the unit waits first in line for the rest.
   */
  | { type: 'convert'; from: string; id: string; bytes: number };

export interface AdmissionStep {
  ledger: Ledger;
  /** Ids admitted by this event (a request admitted at once is among them). */
  admitted: string[];
  /** Requests that can never be admitted here, with the one-line reason. */
  refused: { id: string; why: string }[];
}

export const emptyLedger = (budgetBytes: number): Ledger => ({ budgetBytes, held: [], waiting: [] });

export const heldBytes = (l: Ledger): number => l.held.reduce((n, r) => n + r.bytes, 0);

export const headroomBytes = (l: Ledger): number => l.budgetBytes - heldBytes(l);

const known = (l: Ledger, id: string): boolean => l.held.some((r) => r.id === id) || l.waiting.some((r) => r.id === id);

function badRequest(l: Ledger, id: string, bytes: number): string | null {
  if (!Number.isSafeInteger(bytes) || bytes < 0) return `${id}: reservation ${bytes} is not a byte count`;
  if (bytes > l.budgetBytes) return `${id}: needs ${bytes} bytes, more than the whole budget of ${l.budgetBytes}`;
  if (known(l, id)) return `${id}: already reserved or waiting`;
  return null;
}

/** Admits waiting requests from the front while the front one fits. */
function drain(l: Ledger, admitted: string[]): void {
  let free = headroomBytes(l);
  while (l.waiting.length > 0 && l.waiting[0]!.bytes <= free) {
    const r = l.waiting.shift()!;
    l.held.push(r);
    free -= r.bytes;
    admitted.push(r.id);
  }
}

export function admit(ledger: Ledger, e: AdmissionEvent): AdmissionStep {
  const l: Ledger = { budgetBytes: ledger.budgetBytes, held: [...ledger.held], waiting: [...ledger.waiting] };
  const admitted: string[] = [];
  const refused: { id: string; why: string }[] = [];
  switch (e.type) {
    case 'request': {
      const why = badRequest(l, e.id, e.bytes);
      if (why !== null) refused.push({ id: e.id, why });
      else l.waiting.push({ id: e.id, bytes: e.bytes });
      break;
    }
    case 'release':
      l.held = l.held.filter((r) => r.id !== e.id);
      l.waiting = l.waiting.filter((r) => r.id !== e.id);
      break;
    case 'convert': {
      const claim = l.held.find((r) => r.id === e.from);
      const why = claim ? (e.id === e.from ? null : badRequest(l, e.id, e.bytes)) : `${e.id}: claim ${e.from} is not held`;
      if (why !== null) {
        refused.push({ id: e.id, why });
        break;
      }
      l.held = l.held.filter((r) => r.id !== e.from);
      if (e.bytes <= claim!.bytes) {
        l.held.push({ id: e.id, bytes: e.bytes });
        admitted.push(e.id);
      } else {
        l.waiting.unshift({ id: e.id, bytes: e.bytes });
      }
      break;
    }
  }
  drain(l, admitted);
  return { ledger: l, admitted, refused };
}
