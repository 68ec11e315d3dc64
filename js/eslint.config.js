// The JavaScript host's lint (`npm run lint`, run by scripts/lint): ESLint's
// recommended rules, on Node.js ES modules. Generated code (the transpiled guest
// under gen/) and installed packages are not ours to lint.
import js from '@eslint/js';
import globals from 'globals';

export default [
  { ignores: ['gen/', 'node_modules/'] },
  js.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 'latest',
      sourceType: 'module',
      globals: { ...globals.node },
    },
    rules: {
      // `_` names what destructuring leaves out on purpose.
      'no-unused-vars': ['error', { varsIgnorePattern: '^_', argsIgnorePattern: '^_' }],
    },
  },
];
