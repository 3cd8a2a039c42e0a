'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { parseLine, formatLine } = require('./csv.js');

test('plain fields', () => {
  assert.deepStrictEqual(parseLine('a,b,c'), ['a', 'b', 'c']);
});
test('empty fields', () => {
  assert.deepStrictEqual(parseLine('a,,c,'), ['a', '', 'c', '']);
});
test('an empty line is one empty field', () => {
  assert.deepStrictEqual(parseLine(''), ['']);
});
test('a quoted field holds commas', () => {
  assert.deepStrictEqual(parseLine('"a,b",c'), ['a,b', 'c']);
});
test('doubled quotes inside quotes', () => {
  assert.deepStrictEqual(parseLine('"say ""hi""",x'), ['say "hi"', 'x']);
});
test('spaces in unquoted fields kept', () => {
  assert.deepStrictEqual(parseLine(' a , b '), [' a ', ' b ']);
});
test('an unterminated quote throws', () => {
  assert.deepStrictEqual(parseLine('"abc"'), ['abc']);
  assert.throws(() => parseLine('"abc'), Error);
  assert.throws(() => parseLine('x,"a""'), Error);
});
test('text after a closing quote throws', () => {
  assert.deepStrictEqual(parseLine('"a",b'), ['a', 'b']);
  assert.throws(() => parseLine('"a"b,c'), Error);
});
test('format quotes only where needed', () => {
  assert.strictEqual(formatLine(['a', 'b,c', 'say "hi"', ' pad', 'two\nlines']),
    'a,"b,c","say ""hi"""," pad","two\nlines"');
});
test('format numbers and empty fields', () => {
  assert.strictEqual(formatLine([1, '', 2.5]), '1,,2.5');
});
test('format then parse gives the fields back', () => {
  for (const row of [['x'], ['', ''], ['a,b', '"', ' q '], ['p"q', 'r']]) {
    assert.deepStrictEqual(parseLine(formatLine(row)), row);
  }
});
