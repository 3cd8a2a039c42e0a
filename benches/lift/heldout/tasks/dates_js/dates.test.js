'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { expandRange, countWeekdays, addMonths } = require('./dates.js');

test('a one-day range', () => {
  assert.deepStrictEqual(expandRange('2024-05-01..2024-05-01'), ['2024-05-01']);
});
test('across the end of February in a leap year', () => {
  assert.deepStrictEqual(expandRange('2024-02-27..2024-03-02'),
    ['2024-02-27', '2024-02-28', '2024-02-29', '2024-03-01', '2024-03-02']);
});
test('across the end of February in a common year', () => {
  assert.deepStrictEqual(expandRange('2023-02-27..2023-03-01'), ['2023-02-27', '2023-02-28', '2023-03-01']);
  assert.strictEqual(expandRange('1900-02-01..1900-03-01').length, 29);
});
test('across a new year', () => {
  assert.deepStrictEqual(expandRange('2023-12-31..2024-01-01'), ['2023-12-31', '2024-01-01']);
});
test('a range backwards throws', () => {
  assert.throws(() => expandRange('2024-05-02..2024-05-01'), RangeError);
});
test('dates that are not dates throw', () => {
  for (const spec of ['2023-02-29..2023-03-01', '2024-13-01..2024-13-02', '2024-1-01..2024-01-02',
    '2024-04-31..2024-05-01', 'nonsense', '2024-01-01']) {
    assert.throws(() => expandRange(spec), RangeError, spec);
  }
});
test('weekdays in a week', () => {
  assert.strictEqual(countWeekdays('2024-05-06', '2024-05-12'), 5);
  assert.strictEqual(countWeekdays('2024-05-11', '2024-05-12'), 0);
  assert.strictEqual(countWeekdays('2024-05-12', '2024-05-06'), 0);
});
test('weekdays in a year', () => {
  assert.strictEqual(countWeekdays('2024-01-01', '2024-12-31'), 262);
  assert.strictEqual(countWeekdays('2023-01-01', '2023-12-31'), 260);
});
test('adding months keeps the day or takes the month end', () => {
  assert.strictEqual(addMonths('2024-01-31', 1), '2024-02-29');
  assert.strictEqual(addMonths('2023-01-31', 1), '2023-02-28');
  assert.strictEqual(addMonths('2024-03-31', -1), '2024-02-29');
  assert.strictEqual(addMonths('2024-05-15', 0), '2024-05-15');
});
test('adding months across years', () => {
  assert.strictEqual(addMonths('2024-11-15', 3), '2025-02-15');
  assert.strictEqual(addMonths('2024-01-15', -13), '2022-12-15');
  assert.throws(() => addMonths('2024-02-30', 1), RangeError);
});
