// Strict type-aware lint: floating promises and unsafe `any` flow are errors, because an
// operator that drops a promise silently loses a reconcile.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.cluster/', 'coverage/'] },
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // node:test's describe/it return promises the runner itself tracks.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // URLs, content types and status handling are decided once, in src/kube; everything else uses
    // the typed verbs. Catches `client.request(...)` and `client.request` passed on as a function;
    // node's and undici's own `http.request` etc. are not the kube client.
    files: ['src/**/*.ts'],
    ignores: ['src/kube/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[property.name='request']:not([object.name=/^(?:http|https|http2|undici)$/])",
          message: 'only src/kube talks HTTP to the API server: use the verbs in src/kube/objects.ts',
        },
      ],
    },
  },
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
