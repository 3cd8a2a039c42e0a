'use strict';

// Calendar dates written YYYY-MM-DD: ranges, weekdays, months.
const DAY_MS = 86400000;

function daysIn(year, month) {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

function parse(text) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) throw new RangeError(`not a YYYY-MM-DD date: ${text}`);
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo)) throw new RangeError(`no such date: ${text}`);
  return Date.UTC(y, mo - 1, d);
}

function format(ms) {
  return new Date(ms).toISOString().slice(0, 10);
}

function expandRange(spec) {
  const parts = String(spec).split('..');
  if (parts.length !== 2) throw new RangeError(`not a range: ${spec}`);
  const [from, to] = parts.map(parse);
  if (from > to) throw new RangeError(`range runs backwards: ${spec}`);
  const out = [];
  for (let t = from; t <= to; t += DAY_MS) out.push(format(t));
  return out;
}

function countWeekdays(from, to) {
  const [a, b] = [parse(from), parse(to)];
  let n = 0;
  for (let t = a; t <= b; t += DAY_MS) {
    const wd = new Date(t).getUTCDay();
    if (wd !== 0 && wd !== 6) n += 1;
  }
  return n;
}

function addMonths(date, n) {
  const d = new Date(parse(date));
  const total = d.getUTCFullYear() * 12 + d.getUTCMonth() + n;
  const year = Math.floor(total / 12);
  const month = total - year * 12 + 1;
  const day = Math.min(d.getUTCDate(), daysIn(year, month));
  return format(Date.UTC(year, month - 1, day));
}

module.exports = { expandRange, countWeekdays, addMonths };
