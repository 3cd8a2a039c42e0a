'use strict';

function checkAmount(cents) {
  if (!Number.isInteger(cents) || cents <= 0) throw new RangeError(`amount must be a positive integer, not ${cents}`);
}

function dollars(cents) {
  return (cents / 100).toFixed(2);
}

class Ledger {
  constructor() {
    this.accounts = new Map();
  }

  account(name) {
    if (!this.accounts.has(name)) this.accounts.set(name, { balance: 0, entries: [] });
    return this.accounts.get(name);
  }

  balance(name) {
    return this.accounts.has(name) ? this.accounts.get(name).balance : 0;
  }

  record(name, type, amount) {
    const a = this.account(name);
    a.balance += type === 'deposit' || type === 'transfer-in' ? amount : -amount;
    a.entries.push({ type, amount, balance: a.balance });
  }

  deposit(name, cents) {
    checkAmount(cents);
    this.record(name, 'deposit', cents);
  }

  withdraw(name, cents) {
    checkAmount(cents);
    if (cents > this.balance(name)) throw new Error(`insufficient funds in ${name}`);
    this.record(name, 'withdraw', cents);
  }

  transfer(from, to, cents) {
    checkAmount(cents);
    if (from === to) throw new Error('a transfer needs two accounts');
    if (cents > this.balance(from)) throw new Error(`insufficient funds in ${from}`);
    this.record(from, 'transfer-out', cents);
    this.record(to, 'transfer-in', cents);
  }

  history(name) {
    return this.accounts.has(name) ? this.accounts.get(name).entries.map((e) => ({ ...e })) : [];
  }

  statement(name) {
    const lines = this.history(name).map((e) => {
      const sign = e.type === 'deposit' || e.type === 'transfer-in' ? '+' : '-';
      return `${e.type} ${sign}${dollars(e.amount)} = ${dollars(e.balance)}`;
    });
    lines.push(`balance ${dollars(this.balance(name))}`);
    return lines.join('\n');
  }
}

module.exports = { Ledger };
