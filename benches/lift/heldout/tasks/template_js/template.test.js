'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { render } = require('./template.js');

test('text without placeholders is unchanged', () => {
  assert.strictEqual(render('plain { text }', {}), 'plain { text }');
});
test('a placeholder is replaced', () => {
  assert.strictEqual(render('Hello {{name}}!', { name: 'Ada' }), 'Hello Ada!');
});
test('spaces inside the braces', () => {
  assert.strictEqual(render('{{  name }}', { name: 'Ada' }), 'Ada');
});
test('dotted names follow objects', () => {
  assert.strictEqual(render('{{user.name}} <{{user.mail.home}}>', { user: { name: 'Bo', mail: { home: 'b@x' } } }),
    'Bo <b@x>');
});
test('zero, false and empty values are values', () => {
  assert.strictEqual(render('{{n}}/{{f}}/{{e}}.', { n: 0, f: false, e: '' }), '0/false/.');
});
test('a fallback for undefined or null', () => {
  assert.strictEqual(render('Hi {{name|friend}}', {}), 'Hi friend');
  assert.strictEqual(render('Hi {{name|friend}}', { name: null }), 'Hi friend');
  assert.strictEqual(render('Hi {{name|friend}}', { name: 'Cy' }), 'Hi Cy');
});
test('a missing value throws naming it', () => {
  assert.throws(() => render('{{user.email}}', { user: {} }), /user\.email/);
});
test('a missing object on the path is not a TypeError', () => {
  assert.throws(() => render('{{a.b.c}}', { a: {} }),
    (e) => !(e instanceof TypeError) && /a\.b\.c/.test(e.message));
  assert.strictEqual(render('{{a.b.c|none}}', { a: {} }), 'none');
});
test('an escaped opening is literal', () => {
  assert.strictEqual(render('\\{{x}} is {{x}}', { x: 1 }), '{{x}} is 1');
});
test('an unclosed placeholder throws', () => {
  assert.strictEqual(render('{{name}}', { name: 'a' }), 'a');
  assert.throws(() => render('Hi {{name', { name: 'a' }), Error);
});
test('repeated and adjacent placeholders', () => {
  assert.strictEqual(render('{{a}}{{a}}{{b}}', { a: 'x', b: 'y' }), 'xxy');
});
