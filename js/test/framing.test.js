// Unit tests of the NDJSON framing (src/framing.js): the cases of
// host/src/transport/framing.rs's tests, plus line classification, fed in chunks of
// every size so that no rule depends on where the pipe happens to split the stream.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { EDGE, LineSplitter, classify, truncate } from '../src/framing.js';

/** Every frame of `input`, pushed `chunk` bytes at a time. */
function frames(input, cap, chunk) {
  const splitter = new LineSplitter(cap);
  const bytes = Buffer.from(input);
  const out = [];
  for (let i = 0; i < bytes.length; i += chunk) {
    out.push(...splitter.push(bytes.subarray(i, i + chunk)));
  }
  out.push(...splitter.end());
  return out.map((f) => {
    if (f.line) {
      return { line: f.line.toString('utf8') };
    }
    const { size, head, tail } = f.oversized;
    return { oversized: { size, head: head.toString('utf8'), tail: tail.toString('utf8') } };
  });
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

test('drops an oversized line, keeps its edges, and keeps going', () => {
  const big = `{"jsonrpc":"2.0","id":7,"result":"${'x'.repeat(10_000)}"}`;
  for (const chunk of [1, 64, 300, 4096, 100_000]) {
    assert.deepEqual(frames(`${big}\n{"ok":true}\n`, 1000, chunk), [
      { oversized: { size: big.length, head: big.slice(0, EDGE), tail: big.slice(-EDGE) } },
      { line: '{"ok":true}' },
    ]);
  }
  // A final line without a newline; trailing blanks and the `\r` are left off the tail.
  const late = `{"jsonrpc":"2.0","result":"${'y'.repeat(5000)}","id":"abc"}`;
  assert.deepEqual(frames(`${late} \t\r`, 1000, 700), [
    { oversized: { size: late.length + 3, head: late.slice(0, EDGE), tail: late.slice(-EDGE) } },
  ]);
});

test('a line exactly at the cap is kept', () => {
  for (const chunk of [1, 2, 100]) {
    assert.deepEqual(frames('12345\n123456\n', 5, chunk), [
      { line: '12345' },
      { oversized: { size: 6, head: '123456', tail: '123456' } },
    ]);
  }
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
