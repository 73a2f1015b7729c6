export { writeGeneration, writeDelayMs, type WritePressure, type Demand, type WriteGenerationOptions, type WriteGenerationResult } from './write-generation';
export { generateRows, type GenerateRowsOptions, type GeneratedRow } from './generate-rows';
export { OverBacklogError, RowsRejectedError } from './errors';
export { writeRouted, type RoutedWriteResult, type RoutedWriteTarget } from './write-routed';
export { splitByShard } from './route-rows';
export { castToSchema, castsLosslessly } from './cast-columns';
