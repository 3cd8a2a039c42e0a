'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { PriorityQueue } = require('./queue.js');

function popAll(q) {
  const out = [];
  while (q.size > 0) out.push(q.pop());
  return out;
}

test('an empty queue', () => {
  const q = new PriorityQueue();
  assert.strictEqual(q.size, 0);
  assert.strictEqual(q.pop(), undefined);
  assert.strictEqual(q.peek(), undefined);
});
test('push counts items', () => {
  const q = new PriorityQueue();
  q.push('a', 1);
  q.push('b', 1);
  assert.strictEqual(q.size, 2);
});
test('smallest priority first', () => {
  const q = new PriorityQueue();
  q.push('c', 3); q.push('a', 1); q.push('b', 2);
  assert.deepStrictEqual(popAll(q), ['a', 'b', 'c']);
});
test('peek does not remove', () => {
  const q = new PriorityQueue();
  q.push('x', 5); q.push('y', 2);
  assert.strictEqual(q.peek(), 'y');
  assert.strictEqual(q.size, 2);
  assert.strictEqual(q.pop(), 'y');
});
test('equal priorities come out in push order', () => {
  const q = new PriorityQueue();
  for (const item of ['p', 'q', 'r', 's', 't']) q.push(item, 1);
  q.push('first', 0);
  assert.deepStrictEqual(popAll(q), ['first', 'p', 'q', 'r', 's', 't']);
});
test('negative and fractional priorities', () => {
  const q = new PriorityQueue();
  q.push('half', 0.5); q.push('neg', -2); q.push('zero', 0);
  assert.deepStrictEqual(popAll(q), ['neg', 'zero', 'half']);
});
test('pushes between pops', () => {
  const q = new PriorityQueue();
  q.push('a', 5); q.push('b', 3);
  assert.strictEqual(q.pop(), 'b');
  q.push('c', 1); q.push('d', 4);
  assert.deepStrictEqual(popAll(q), ['c', 'd', 'a']);
});
test('many items: sorted, ties in push order', () => {
  const q = new PriorityQueue();
  let seed = 7;
  const pushed = [];
  for (let i = 0; i < 3000; i++) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const p = seed % 50;
    pushed.push([p, i]);
    q.push(i, p);
  }
  const expected = pushed.sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(([, i]) => i);
  assert.deepStrictEqual(popAll(q), expected);
});
test('drain empties the queue in order', () => {
  const q = new PriorityQueue();
  q.push('b', 2); q.push('a', 1); q.push('c', 2);
  assert.deepStrictEqual(q.drain(), ['a', 'b', 'c']);
  assert.strictEqual(q.size, 0);
});
test('a custom compare', () => {
  const q = new PriorityQueue({ compare: (a, b) => b - a });
  q.push('low', 1); q.push('high', 9); q.push('mid', 5); q.push('high2', 9);
  assert.deepStrictEqual(popAll(q), ['high', 'high2', 'mid', 'low']);
});
