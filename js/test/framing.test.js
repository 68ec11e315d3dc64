// Unit tests of the NDJSON framing (src/framing.js): the cases of
// host/src/transport/framing.rs's tests, plus line classification, fed in chunks of
// every size so that no rule depends on where the pipe happens to split the stream.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { LineSplitter, classify, idAtEnd, idAtStart, truncate } from '../src/framing.js';

/** Every frame of `input`, pushed `chunk` bytes at a time. */
function frames(input, cap, chunk) {
  const splitter = new LineSplitter(cap);
  const bytes = Buffer.from(input);
  const out = [];
  for (let i = 0; i < bytes.length; i += chunk) {
    out.push(...splitter.push(bytes.subarray(i, i + chunk)));
  }
  out.push(...splitter.end());
  return out.map((f) => (f.line ? { line: f.line.toString('utf8') } : f));
}

test('splits lines across small chunks', () => {
  for (const chunk of [1, 3, 64]) {
    assert.deepEqual(frames('{"a":1}\r\n\n{"b":2}\n{"c":3}', 100, chunk), [
      { line: '{"a":1}' },
      { line: '' },
      { line: '{"b":2}' },
      { line: '{"c":3}' },
    ]);
  }
});

test('drops an oversized line, keeps its id, and keeps going', () => {
  const big = `{"jsonrpc":"2.0","id":7,"result":"${'x'.repeat(10_000)}"}`;
  for (const chunk of [64, 4096, 100_000]) {
    assert.deepEqual(frames(`${big}\n{"ok":true}\n`, 1000, chunk), [
      { oversized: { size: big.length, id: '7' } },
      { line: '{"ok":true}' },
    ]);
  }
  // The id after the result, and a final line without a newline.
  const late = `{"jsonrpc":"2.0","result":"${'y'.repeat(5000)}","id":"abc"}`;
  assert.deepEqual(frames(late, 1000, 700), [{ oversized: { size: late.length, id: '"abc"' } }]);
});

test('a line exactly at the cap is kept', () => {
  for (const chunk of [1, 2, 100]) {
    assert.deepEqual(frames('12345\n123456\n', 5, chunk), [{ line: '12345' }, { oversized: { size: 6, id: null } }]);
  }
});

test('finds ids at either end', () => {
  assert.equal(idAtStart(Buffer.from('{"jsonrpc":"2.0","id":"a\\"b","result":{')), '"a\\"b"');
  assert.equal(idAtStart(Buffer.from('{"result":{"id":3}')), null);
  assert.equal(idAtEnd(Buffer.from('xx"}]},"jsonrpc":"2.0","id":42}')), '42');
  assert.equal(idAtEnd(Buffer.from('xx","id":42,"more":1}')), null);
});

test('classifies lines as messages, blanks or skipped text', () => {
  assert.deepEqual(classify(Buffer.from(' \t{"a":1}')), { message: ' \t{"a":1}' });
  assert.deepEqual(classify(Buffer.from('[1]')), { message: '[1]' });
  assert.deepEqual(classify(Buffer.from(' \r\t ')), { blank: true });
  assert.deepEqual(classify(Buffer.from('Server started on stdio')), { notJson: 'Server started on stdio' });
  // Vertical tab is not ASCII whitespace to Rust either.
  assert.deepEqual(classify(Buffer.from('\v{}')), { notJson: '\v{}' });
});

test('truncates skipped text on a character boundary', () => {
  assert.equal(truncate(Buffer.from('abc'), 3), 'abc');
  assert.equal(truncate(Buffer.from('abcd'), 3), 'abc…');
  // "é" is two bytes: cutting at 2 must not split it.
  assert.equal(truncate(Buffer.from('aéb'), 2), 'a…');
});
