// ESLint for `npm run lint` (see docs/contributing.md). TypeScript is linted with type information
// (typescript-eslint's recommendedTypeChecked, through tsconfig.json); the .mjs scripts and fixtures,
// which no tsconfig covers, without it.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'reports/', '.stryker-tmp/', '.sluice/', '.cache/'] },
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  {
    files: ['{src,test,bench,examples}/**/*.ts', 'scripts/*/*.ts'], // not scripts/smoke/fixtures: projects of their own
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Named here although the preset has them: these two are why the lint runs with type information.
      // A promise nobody awaits loses its rejection and its ordering; `void` marks one left to run on purpose.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // Off: an `async` function without `await` is how this code implements a port that returns a promise
      // (Broker.publish, Store.close, kafkajs callbacks): `async` turns a synchronous throw into a rejection.
      '@typescript-eslint/require-await': 'off',
      // A leading `_` names a parameter a signature requires and the body does not use, and
      // `const { o: _old, ...rest } = x` drops a property.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // A caught value is passed on as it was thrown, whatever it is.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // `try { best effort } catch {}` is how a cleanup says it does not care whether it worked.
      'no-empty': ['error', { allowEmptyCatch: true }],
      // `let x; ...closures that read x...; x = make(...)`: a `const` there would be read before it is set.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      // Prettier wraps code at 120 columns but not comments; this holds comments to the same width. Strings
      // (error messages, read whole by grep) and the `Stryker disable` comments (which must stay on the line
      // before what they mark) may run longer, as may a table's rows in a doc comment.
      'max-len': [
        'error',
        {
          code: 120,
          ignoreStrings: true,
          ignoreTemplateLiterals: true,
          ignoreRegExpLiterals: true,
          ignoreUrls: true,
          ignorePattern: 'Stryker disable|eslint-disable|^\\s*\\* \\|',
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // Off in tests: vitest types its asymmetric matchers (`expect.stringMatching(...)`, `expect.any(...)`)
      // as `any`, so every `toMatchObject({ message: expect.stringMatching(...) })` would be reported.
      '@typescript-eslint/no-unsafe-assignment': 'off',
    },
  },
  {
    files: ['{src,test,bench,examples,scripts}/**/*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { globals: globals.node },
    rules: {
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
);
