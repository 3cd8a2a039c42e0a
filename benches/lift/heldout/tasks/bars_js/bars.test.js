'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { renderBars, sparkline } = require('./bars.js');

test('one row fills the width', () => {
  assert.strictEqual(renderBars([['a', 5]], 4), 'a | #### 5');
});
test('bars scale to the largest value', () => {
  assert.strictEqual(renderBars([['a', 10], ['b', 5]], 10), 'a | ########## 10\nb | #####      5');
});
test('labels padded to the longest', () => {
  assert.strictEqual(renderBars([['apple', 2], ['fig', 1]], 2), 'apple | ## 2\nfig   | #  1');
});
test('bar lengths rounded', () => {
  assert.strictEqual(renderBars([['a', 3], ['b', 1]], 4), 'a | #### 3\nb | #    1');
  assert.strictEqual(renderBars([['a', 4], ['b', 1]], 2), 'a | ## 4\nb | #  1');
});
test('all zero values give empty bars', () => {
  assert.strictEqual(renderBars([['a', 0], ['b', 0]], 3), 'a |     0\nb |     0');
});
test('no rows', () => {
  assert.strictEqual(renderBars([], 5), '');
});
test('bad values and widths throw RangeError', () => {
  assert.throws(() => renderBars([['a', -1]], 3), RangeError);
  assert.throws(() => renderBars([['a', 1]], 0), RangeError);
});
test('sparkline of a ramp', () => {
  assert.strictEqual(sparkline([1, 2, 3, 4, 5, 6, 7, 8]), '▁▂▃▄▅▆▇█');
});
test('sparkline scales and rounds', () => {
  assert.strictEqual(sparkline([0, 50, 100]), '▁▅█');
  assert.strictEqual(sparkline([10, 0]), '█▁');
});
test('sparkline of flat or no values', () => {
  assert.strictEqual(sparkline([3, 3]), '▁▁');
  assert.strictEqual(sparkline([]), '');
});
