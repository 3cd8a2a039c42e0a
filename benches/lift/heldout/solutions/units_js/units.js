'use strict';

const LINEAR = {
  mm: ['length', 0.001], cm: ['length', 0.01], m: ['length', 1], km: ['length', 1000],
  in: ['length', 0.0254], ft: ['length', 0.3048], mi: ['length', 1609.344],
  g: ['mass', 0.001], kg: ['mass', 1], lb: ['mass', 0.45359237], oz: ['mass', 0.45359237 / 16],
};
const TO_C = { C: (v) => v, F: (v) => ((v - 32) * 5) / 9, K: (v) => v - 273.15 };
const FROM_C = { C: (v) => v, F: (v) => (v * 9) / 5 + 32, K: (v) => v + 273.15 };

function kind(unit) {
  if (LINEAR[unit]) return LINEAR[unit][0];
  if (TO_C[unit]) return 'temperature';
  throw new Error(`unknown unit: ${unit}`);
}

function convert(value, from, to) {
  if (kind(from) !== kind(to)) throw new Error(`incompatible units: ${from} and ${to}`);
  if (kind(from) === 'temperature') return FROM_C[to](TO_C[from](value));
  return (value * LINEAR[from][1]) / LINEAR[to][1];
}

function parseQuery(text) {
  const m = /^\s*(-?\d+(?:\.\d+)?)\s+(\S+)\s+(?:to|in)\s+(\S+)\s*$/.exec(text);
  if (!m) throw new Error(`not a query: ${text}`);
  return { value: Number(m[1]), from: m[2], to: m[3] };
}

function answer(text) {
  const q = parseQuery(text);
  const result = Number(convert(q.value, q.from, q.to).toFixed(3));
  return `${q.value} ${q.from} = ${result} ${q.to}`;
}

module.exports = { convert, parseQuery, answer };
