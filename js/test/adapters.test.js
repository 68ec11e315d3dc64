// Tools in each model provider's dialect through the JavaScript host: the guest's
// conversions (`registry.adapted-tools`) and calls mapped back
// (`registry.start-adapted-call`), against a server whose schemas are pydantic's — the
// assertions of tests/tests/all/cli/adapters.rs.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { adapterModelsEntry, assertConnected, call, callError, open, ready, within } from './support.js';

for (const thread of ['main', 'worker']) {
  test(`tools in a dialect, and a call made under it mapped back (driver on the ${thread} thread)`, async (t) => {
    const box = await open(t, { models: adapterModelsEntry() }, { thread });
    assertConnected(await ready(box), 'models');

    const gemini = await within(box.adaptedTools('gemini'), 'the gemini tools');
    assert.equal(gemini.dialect, 'gemini');
    assert.equal(gemini.tools.length + gemini.refused.length, 7);
    const saveTree = gemini.tools.find((tool) => tool.registryName === 'mcp__models__save_tree');
    assert.ok(saveTree, 'save_tree is offered to gemini');
    assert.equal(saveTree.definition.name, 'mcp__models__save_tree');
    assert.ok(!JSON.stringify(saveTree.definition).includes('$ref'), 'references inlined');
    assert.ok(
      saveTree.adapterNotes.some((n) => n.kind === 'recursion-cut' && n.pointer.startsWith('/inputSchema')),
      JSON.stringify(saveTree.adapterNotes),
    );

    const strict = await within(box.adaptedTools('openai-strict'), 'the strict tools');
    const addPerson = strict.tools.find((tool) => tool.registryName === 'mcp__models__add_person');
    assert.equal(addPerson.definition.function.strict, true);
    assert.ok(addPerson.responsesDefinition, 'the Responses API flat tool too');

    // What a model writes under strict mode: `null` for what it would have left out.
    const args = {
      person: {
        name: 'Ada',
        email: null,
        age: null,
        home: { street: '1 rue', city: 'Paris', postcode: '75001', country: null },
        work: null,
        tags: null,
      },
      notify: null,
    };
    const result = await within(
      box.callAdaptedTool('openai-strict', addPerson.name, args),
      'the adapted call answers',
    );
    assert.equal(result.text, 'added Ada');
    // The same arguments as a plain call: the server's own schema refuses the nulls.
    const refused = await callError(box, 'mcp__models__add_person', args);
    assert.equal(refused.kind, 'invalid-arguments');

    await assert.rejects(box.adaptedTools('gpt'), /openai-strict/);
    assert.equal((await call(box, 'mcp__models__save_tree', { root: { label: 'a' } })).text, 'saved a');
  });
}
