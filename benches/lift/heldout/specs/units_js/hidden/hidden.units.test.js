'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { convert, parseQuery, answer } = require('./units.js');

function near(actual, expected) {
  assert.ok(Math.abs(actual - expected) < 1e-9 * Math.max(1, Math.abs(expected)), `${actual} is not ${expected}`);
}

test('metric lengths', () => {
  near(convert(1, 'km', 'm'), 1000);
  near(convert(250, 'mm', 'cm'), 25);
  near(convert(3, 'm', 'm'), 3);
});
test('imperial lengths', () => {
  near(convert(1, 'mi', 'ft'), 5280);
  near(convert(1, 'ft', 'in'), 12);
  near(convert(1, 'in', 'cm'), 2.54);
  near(convert(1, 'mi', 'km'), 1.609344);
});
test('masses', () => {
  near(convert(1, 'lb', 'kg'), 0.45359237);
  near(convert(1, 'lb', 'oz'), 16);
  near(convert(2500, 'g', 'kg'), 2.5);
});
test('incompatible and unknown units', () => {
  assert.throws(() => convert(1, 'kg', 'm'), /incompatible/);
  assert.throws(() => convert(1, 'm', 'parsec'), /parsec/);
  assert.throws(() => convert(1, 'furlong', 'm'), /furlong/);
});
test('temperatures', () => {
  near(convert(100, 'C', 'F'), 212);
  near(convert(32, 'F', 'C'), 0);
  near(convert(0, 'K', 'C'), -273.15);
  near(convert(-40, 'F', 'C'), -40);
  near(convert(300, 'K', 'F'), 80.33);
});
test('temperatures only convert to temperatures', () => {
  near(convert(10, 'C', 'C'), 10);
  assert.throws(() => convert(1, 'C', 'kg'), /incompatible/);
  assert.throws(() => convert(1, 'm', 'K'), /incompatible/);
});
test('parse a query', () => {
  assert.deepStrictEqual(parseQuery('5 km to mi'), { value: 5, from: 'km', to: 'mi' });
  assert.deepStrictEqual(parseQuery(' -3.5 km  in mi '), { value: -3.5, from: 'km', to: 'mi' });
});
test('parse a query with in as a unit', () => {
  assert.deepStrictEqual(parseQuery('12 in to cm'), { value: 12, from: 'in', to: 'cm' });
  assert.deepStrictEqual(parseQuery('0.5 ft in in'), { value: 0.5, from: 'ft', to: 'in' });
});
test('bad queries throw', () => {
  for (const bad of ['', 'km to mi', '5 km', '5 km mi', 'five km to mi', '5 km to', '1.2.3 m to cm']) {
    assert.throws(() => parseQuery(bad), Error, bad);
  }
});
test('answers', () => {
  assert.strictEqual(answer('5 km to mi'), '5 km = 3.107 mi');
  assert.strictEqual(answer('0 C to F'), '0 C = 32 F');
  assert.strictEqual(answer('1 lb in g'), '1 lb = 453.592 g');
});
test('answers without trailing zeros', () => {
  assert.strictEqual(answer('1.5 m to cm'), '1.5 m = 150 cm');
  assert.strictEqual(answer('1 in to mm'), '1 in = 25.4 mm');
  assert.strictEqual(answer('-40 C in F'), '-40 C = -40 F');
});
