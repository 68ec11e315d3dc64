// Unit tests of `${VAR}` resolution and the child's environment (src/endpoint.js): the
// cases of host/src/transport/endpoint.rs's tests, with the same messages.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { EndpointError, interpolate, resolveStdio } from '../src/endpoint.js';

const env = (name) =>
  ({ HOME: '/home/me', API_TOKEN: 'secret', EMPTY: '', PATH: '/bin' })[name];

test('expands references and defaults', () => {
  assert.equal(interpolate('${HOME}/x', 'f', env), '/home/me/x');
  assert.equal(interpolate('a${NOPE:-b}c', 'f', env), 'abc');
  assert.equal(interpolate('${EMPTY:-d}', 'f', env), 'd');
  assert.equal(interpolate('[${EMPTY}]', 'f', env), '[]');
  assert.equal(interpolate('$HOME ${HOME}', 'f', env), '$HOME /home/me');
  assert.equal(interpolate('no refs', 'f', env), 'no refs');
  assert.equal(interpolate('${NOPE:-a:-b}', 'f', env), 'a:-b');
});

test('an unset variable is an error naming the field and the variable', () => {
  assert.throws(
    () => interpolate('Bearer ${GH_TOKEN}', 'headers.Authorization', env),
    new EndpointError(
      '`headers.Authorization` uses ${GH_TOKEN}, which is not set; ' +
        'set GH_TOKEN in the environment or write ${GH_TOKEN:-default}',
    ),
  );
  assert.throws(
    () => interpolate('${OOPS', 'args[0]', env),
    new EndpointError('`args[0]` has an unclosed `${` in "${OOPS"'),
  );
  assert.throws(
    () => interpolate('${A B}', 'args[0]', env),
    new EndpointError('`args[0]` has an invalid variable reference `${A B}`'),
  );
  assert.throws(() => interpolate('${}', 'cwd', env), /invalid variable reference/);
});

test("the child's environment is the allowlist plus the explicit env", () => {
  const spec = resolveStdio(
    {
      command: 'srv',
      args: ['--home=${HOME}'],
      env: [
        { name: 'TOKEN', value: '${API_TOKEN}' },
        { name: 'PATH', value: '/opt/bin' },
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
  const stdio = (fields) => resolveStdio({ command: 'srv', args: [], env: [], ...fields }, env);
  assert.throws(() => stdio({ command: '${EMPTY}' }), new EndpointError('`command` is empty'));
  assert.equal(stdio({ cwd: '${HOME}/work' }).cwd, '/home/me/work');
  assert.throws(() => stdio({ cwd: '${NOPE}' }), /`cwd` uses \$\{NOPE\}/);
});
