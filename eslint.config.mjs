import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['node_modules/**', '.turnstile/**', 'dist/**', '**/*.mjs', 'vitest.config.ts'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflow code is replayed deterministically in a sandbox: no Node built-ins, no
    // activity implementations (types only), no clocks or randomness outside the SDK.
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        paths: nodeBuiltins.map((name) => ({ name, message: 'Node built-ins are not allowed in workflow code.' })),
        patterns: [{ group: ['../activities', '../activities/*'], allowTypeImports: true, message: 'Import activities only with `import type`.' }],
      }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // The policy core is pure: no I/O and no Temporal.
    files: ['src/policy/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: nodeBuiltins.map((name) => ({ name, message: 'The policy core does no I/O.' })),
        patterns: [
          { group: ['@temporalio/*'], message: 'The policy core has no Temporal import.' },
          { group: ['../storage', '../storage/*'], message: 'The policy core does not reach storage; shared types live in src/messages/.' },
        ],
      }],
    },
  },
  {
    // The client library is used without the command line.
    files: ['src/client/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group: ['../cli', '../cli/*'], message: 'The client does not import the CLI; shared errors live in src/messages/errors.ts.' }],
      }],
    },
  },
);
