import path from 'node:path';

// Absolute paths inside the project, independent of the current directory.
export const PROJECT_ROOT = path.resolve(__dirname, '..');
export const WORKFLOWS_PATH = path.join(PROJECT_ROOT, 'workflows', 'index.ts');
