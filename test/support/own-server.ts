import { inject } from 'vitest';

// Tests that start Temporal servers of their own (a dev server to kill, `turnstile dev`,
// a server to restart) need the Temporal server binary global-setup.ts found. With
// TEMPORAL_ADDRESS set and no TEMPORAL_SERVER_PATH there is none: they skip, and the
// report says why.

export const temporalBinary: string | null = inject('temporalBinary');

export const NO_BINARY = 'TEMPORAL_ADDRESS is set without TEMPORAL_SERVER_PATH: no Temporal server binary to start a server of our own';
