'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { encode, decode, Shortener } = require('./shortener.js');

test('encode in base 62', () => {
  assert.deepStrictEqual([0, 9, 10, 35, 36, 61, 62, 3843, 3844].map(encode),
    ['0', '9', 'a', 'z', 'A', 'Z', '10', 'ZZ', '100']);
});
test('decode reads encode back', () => {
  for (const n of [0, 1, 61, 62, 12345, 987654321]) assert.strictEqual(decode(encode(n)), n);
  assert.strictEqual(decode('Z'), 61);
});
test('decode rejects bad codes', () => {
  assert.strictEqual(decode('10'), 62);
  for (const bad of ['', 'a-b', 'ab!', ' 1']) assert.throws(() => decode(bad), Error, bad);
});
test('codes in order of new URLs', () => {
  const s = new Shortener();
  assert.strictEqual(s.shorten('https://a.example/'), '1');
  assert.strictEqual(s.shorten('http://b.example/x?y=1'), '2');
  assert.strictEqual(s.shorten('https://a.example/'), '1');
  assert.strictEqual(s.shorten('https://c.example/'), '3');
});
test('the 62nd URL', () => {
  const s = new Shortener();
  let code;
  for (let i = 1; i <= 62; i++) code = s.shorten(`https://e.example/${i}`);
  assert.strictEqual(code, '10');
});
test('only http and https URLs', () => {
  const s = new Shortener();
  assert.strictEqual(s.shorten('https://ok.example/'), '1');
  for (const bad of ['ftp://x.example/', 'not a url', 'javascript:alert(1)', '']) {
    assert.throws(() => s.shorten(bad), TypeError, bad);
  }
  assert.strictEqual(s.shorten('http://ok2.example/'), '2');
});
test('resolve returns the URL and counts hits', () => {
  const s = new Shortener();
  const code = s.shorten('https://a.example/');
  assert.strictEqual(s.resolve(code), 'https://a.example/');
  s.resolve(code);
  assert.deepStrictEqual(s.stats(code), { url: 'https://a.example/', hits: 2 });
});
test('unknown codes', () => {
  const s = new Shortener();
  s.shorten('https://a.example/');
  assert.strictEqual(s.resolve('9'), null);
  assert.strictEqual(s.stats('9'), null);
});
test('stats does not count a hit', () => {
  const s = new Shortener();
  const code = s.shorten('https://a.example/');
  s.stats(code);
  assert.strictEqual(s.stats(code).hits, 0);
});
test('top links by hits', () => {
  const s = new Shortener();
  const [a, b, c] = ['https://a.example/', 'https://b.example/', 'https://c.example/'].map((u) => s.shorten(u));
  s.resolve(b); s.resolve(b); s.resolve(c);
  assert.deepStrictEqual(s.top(2), [
    { code: b, url: 'https://b.example/', hits: 2 },
    { code: c, url: 'https://c.example/', hits: 1 },
  ]);
  assert.deepStrictEqual(s.top(10).map((e) => e.code), [b, c, a]);
});
test('top ties in the order codes were made', () => {
  const s = new Shortener();
  const codes = ['https://x.example/', 'https://y.example/', 'https://z.example/'].map((u) => s.shorten(u));
  s.resolve(codes[2]); s.resolve(codes[0]);
  assert.deepStrictEqual(s.top(3).map((e) => e.code), [codes[0], codes[2], codes[1]]);
  assert.deepStrictEqual(s.top(0), []);
});
