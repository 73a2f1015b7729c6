export { writeGeneration, writeDelayMs, type WritePressure, type Demand, type WriteGenerationOptions, type WriteGenerationResult } from './write-generation';
export { generateRows, type GenerateRowsOptions, type GeneratedRow } from './generate-rows';
export { OverBacklogError } from './errors';
