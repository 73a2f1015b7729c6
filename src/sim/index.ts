// Discrete-event simulator of a table workflow around the pure core (no Temporal).
export { runSimulation } from './simulator';
export { summarize, formatSummary, type SimSummary } from './report';
export { simPolicy } from './policy';
export { mulberry32, draw, rangeMax, type Range, type Rng } from './rng';
export type * from './types';
