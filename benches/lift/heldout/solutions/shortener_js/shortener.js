'use strict';

const DIGITS = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

function encode(n) {
  let out = '';
  do {
    out = DIGITS[n % 62] + out;
    n = Math.floor(n / 62);
  } while (n > 0);
  return out;
}

function decode(code) {
  if (!code) throw new Error('empty code');
  let n = 0;
  for (const c of code) {
    const d = DIGITS.indexOf(c);
    if (d < 0) throw new Error(`bad character ${c} in ${code}`);
    n = n * 62 + d;
  }
  return n;
}

class Shortener {
  constructor() {
    this.byUrl = new Map();
    this.byCode = new Map();
  }

  shorten(url) {
    let parsed;
    try { parsed = new URL(url); } catch { throw new TypeError(`not a URL: ${url}`); }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TypeError(`not http(s): ${url}`);
    if (this.byUrl.has(url)) return this.byUrl.get(url);
    const code = encode(this.byCode.size + 1);
    this.byUrl.set(url, code);
    this.byCode.set(code, { url, hits: 0, order: this.byCode.size });
    return code;
  }

  resolve(code) {
    const entry = this.byCode.get(code);
    if (!entry) return null;
    entry.hits += 1;
    return entry.url;
  }

  stats(code) {
    const entry = this.byCode.get(code);
    return entry ? { url: entry.url, hits: entry.hits } : null;
  }

  top(n) {
    return [...this.byCode.entries()]
      .sort(([, a], [, b]) => b.hits - a.hits || a.order - b.order)
      .slice(0, n)
      .map(([code, e]) => ({ code, url: e.url, hits: e.hits }));
  }
}

module.exports = { encode, decode, Shortener };
