'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { Ledger } = require('./ledger.js');

test('deposits and withdrawals change the balance', () => {
  const l = new Ledger();
  l.deposit('amy', 1000);
  l.withdraw('amy', 250);
  assert.strictEqual(l.balance('amy'), 750);
  assert.strictEqual(l.balance('nobody'), 0);
});
test('bad amounts throw RangeError', () => {
  const l = new Ledger();
  l.deposit('amy', 1);
  for (const bad of [0, -5, 1.5, '10', NaN]) {
    assert.throws(() => l.deposit('amy', bad), RangeError, String(bad));
    assert.throws(() => l.withdraw('amy', bad), RangeError, String(bad));
  }
  assert.strictEqual(l.balance('amy'), 1);
});
test('overdrawing throws and changes nothing', () => {
  const l = new Ledger();
  l.deposit('amy', 100);
  assert.throws(() => l.withdraw('amy', 101), /insufficient funds/);
  assert.strictEqual(l.balance('amy'), 100);
  l.withdraw('amy', 100);
  assert.strictEqual(l.balance('amy'), 0);
});
test('transfers move money', () => {
  const l = new Ledger();
  l.deposit('amy', 500);
  l.transfer('amy', 'bob', 200);
  assert.deepStrictEqual([l.balance('amy'), l.balance('bob')], [300, 200]);
});
test('a transfer is all or nothing', () => {
  const l = new Ledger();
  l.deposit('amy', 500);
  assert.throws(() => l.transfer('amy', 'bob', 501), /insufficient funds/);
  assert.throws(() => l.transfer('amy', 'bob', -1), RangeError);
  assert.deepStrictEqual([l.balance('amy'), l.balance('bob')], [500, 0]);
  assert.deepStrictEqual(l.history('bob'), []);
});
test('a transfer to the same account throws', () => {
  const l = new Ledger();
  l.deposit('amy', 500);
  assert.throws(() => l.transfer('amy', 'amy', 10), Error);
  assert.strictEqual(l.balance('amy'), 500);
  assert.strictEqual(l.history('amy').length, 1);
});
test('history lists entries with balances', () => {
  const l = new Ledger();
  l.deposit('amy', 1000);
  l.withdraw('amy', 100);
  l.transfer('amy', 'bob', 300);
  l.transfer('bob', 'amy', 50);
  assert.deepStrictEqual(l.history('amy'), [
    { type: 'deposit', amount: 1000, balance: 1000 },
    { type: 'withdraw', amount: 100, balance: 900 },
    { type: 'transfer-out', amount: 300, balance: 600 },
    { type: 'transfer-in', amount: 50, balance: 650 },
  ]);
  assert.deepStrictEqual(l.history('bob').map((e) => e.type), ['transfer-in', 'transfer-out']);
});
test('failed operations leave no entry', () => {
  const l = new Ledger();
  l.deposit('amy', 10);
  try { l.withdraw('amy', 11); } catch (e) { /* expected */ }
  assert.strictEqual(l.history('amy').length, 1);
  assert.deepStrictEqual(l.history('nobody'), []);
});
test('a statement', () => {
  const l = new Ledger();
  l.deposit('amy', 1250);
  l.withdraw('amy', 200);
  l.transfer('amy', 'bob', 5);
  assert.strictEqual(l.statement('amy'),
    'deposit +12.50 = 12.50\nwithdraw -2.00 = 10.50\ntransfer-out -0.05 = 10.45\nbalance 10.45');
});
test('a statement of incoming money', () => {
  const l = new Ledger();
  l.deposit('amy', 123456);
  l.transfer('amy', 'bob', 100001);
  assert.strictEqual(l.statement('bob'), 'transfer-in +1000.01 = 1000.01\nbalance 1000.01');
});
test('an empty statement', () => {
  assert.strictEqual(new Ledger().statement('zed'), 'balance 0.00');
});
