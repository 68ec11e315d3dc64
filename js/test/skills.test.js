// Skills (the io.modelcontextprotocol/skills extension) through McpBox, against the
// hostile skills server of the Rust end-to-end tests
// (tests/tests/all/e2e/hostile_skills_server.py, a real process): the honest skill
// loads and its listed file reads; a lying one is refused by name; nothing is read
// before a load.

import assert from 'node:assert/strict';
import { dirname, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { assertConnected, open, ready, within } from './support.js';

const server = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '../../tests/tests/all/e2e/hostile_skills_server.py',
);

test('skills list without reads, load verified, and a lying skill is refused', async (t) => {
  const box = await open(t, { hs: { command: 'python3', args: [server] } });
  assertConnected(await ready(box), 'hs');
  const skills = await within(box.listSkills(), 'skills/list');
  assert.deepEqual(
    skills.map((s) => [s.server, s.frontmatter.name]),
    ['good', 'wrong-digest', 'wrong-size', 'wrong-front', 'oversized'].map((n) => ['hs', n]),
  );
  const reads = async () => (await within(box.callTool('mcp__hs__reads', {}), 'reads')).text;
  assert.equal(await reads(), '', 'listing read no skill file');

  const loaded = await within(box.loadSkill('hs', 'good'), 'load good');
  assert.match(loaded.text, /^---\nname: good\n/);
  assert.equal(loaded.entry.uri, 'skill://good/SKILL.md');
  const notes = await within(box.readSkillFile('hs', 'good', 'references/notes.md'), 'read notes');
  assert.equal(notes.text, 'Notes for the skill.\n');

  await assert.rejects(within(box.loadSkill('hs', 'wrong-front'), 'load wrong-front'), (e) => {
    assert.equal(e.kind, 'protocol');
    assert.match(e.message, /skill `wrong-front` .* on server `hs` failed verification: frontmatter field `description`/);
    return true;
  });
});
