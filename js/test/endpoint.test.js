// Unit tests of `${VAR}` resolution and the child's environment (src/endpoint.js): the
// cases of host/src/transport/endpoint.rs's tests, with the same messages. The guest
// splits the text (guest/src/variables.rs); the host only looks names up.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { EndpointError, resolve, resolveStdio } from '../src/endpoint.js';

import { ref, tpl } from './support.js';

const env = (name) =>
  ({ HOME: '/home/me', API_TOKEN: 'secret', EMPTY: '', PATH: '/bin' })[name];

test('expands references and defaults', () => {
  assert.equal(resolve(tpl`${ref('HOME')}/x`, 'f', env), '/home/me/x');
  assert.equal(resolve(tpl`a${ref('NOPE', 'b')}c`, 'f', env), 'abc');
  assert.equal(resolve(tpl`${ref('EMPTY', 'd')}`, 'f', env), 'd');
  assert.equal(resolve(tpl`[${ref('EMPTY')}]`, 'f', env), '[]');
  assert.equal(resolve(tpl`$HOME ${ref('HOME')}`, 'f', env), '$HOME /home/me');
  assert.equal(resolve(tpl`no refs`, 'f', env), 'no refs');
  assert.equal(resolve(tpl`${ref('NOPE', 'a:-b')}`, 'f', env), 'a:-b');
});

test('an unset variable is an error naming the field and the variable', () => {
  assert.throws(
    () => resolve(tpl`Bearer ${ref('GH_TOKEN')}`, 'headers.Authorization', env),
    new EndpointError(
      '`headers.Authorization` uses ${GH_TOKEN}, which is not set; ' +
        'set GH_TOKEN in the environment or write ${GH_TOKEN:-default}',
    ),
  );
});

test("the child's environment is the allowlist plus the explicit env", () => {
  const spec = resolveStdio(
    {
      command: tpl`srv`,
      args: [tpl`--home=${ref('HOME')}`],
      env: [
        { name: 'TOKEN', value: tpl`${ref('API_TOKEN')}` },
        { name: 'PATH', value: tpl`/opt/bin` },
      ],
    },
    env,
  );
  assert.deepEqual(spec.args, ['--home=/home/me']);
  assert.equal(spec.cwd, undefined);
  // The ambient API_TOKEN is not passed through by itself…
  assert.ok(!('API_TOKEN' in spec.env));
  // …only where the configuration asks for it, and explicit values win.
  assert.deepEqual(spec.env, { PATH: '/opt/bin', HOME: '/home/me', TOKEN: 'secret' });
});

test('an empty command and references in cwd', () => {
  const stdio = (fields) => resolveStdio({ command: tpl`srv`, args: [], env: [], ...fields }, env);
  assert.throws(() => stdio({ command: tpl`${ref('EMPTY')}` }), new EndpointError('`command` is empty'));
  assert.equal(stdio({ cwd: tpl`${ref('HOME')}/work` }).cwd, '/home/me/work');
  assert.throws(() => stdio({ cwd: tpl`${ref('NOPE')}` }), /`cwd` uses \$\{NOPE\}/);
});
