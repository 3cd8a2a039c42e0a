'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { slugify } = require('./slugify.js');

test('lower case and dashes', () => {
  assert.strictEqual(slugify('Hello World'), 'hello-world');
});
test('accents removed', () => {
  assert.strictEqual(slugify('Crème Brûlée'), 'creme-brulee');
});
test('runs of other characters become one dash', () => {
  assert.strictEqual(slugify('a  --  b!!c'), 'a-b-c');
});
test('no dash at the ends', () => {
  assert.strictEqual(slugify('  --Hi there!-- '), 'hi-there');
});
test('digits kept', () => {
  assert.strictEqual(slugify('Top 10 Tips 2024'), 'top-10-tips-2024');
});
test('nothing left gives an empty slug', () => {
  assert.strictEqual(slugify('!!! ???'), '');
});
test('long titles cut at a dash boundary', () => {
  const s = slugify('The quick brown fox jumps over the lazy dog again and again');
  assert.strictEqual(s, 'the-quick-brown-fox-jumps-over-the-lazy');
});
test('a first word longer than the limit is cut at 40', () => {
  assert.strictEqual(slugify('a'.repeat(50)), 'a'.repeat(40));
});
test('unicode punctuation is a separator', () => {
  assert.strictEqual(slugify('rock’n’roll — live'), 'rock-n-roll-live');
});
