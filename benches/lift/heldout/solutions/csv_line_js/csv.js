'use strict';

// One line of CSV: read into fields, and written from them.
function parseLine(line) {
  const fields = [];
  let i = 0;
  for (;;) {
    let field = '';
    if (line[i] === '"') {
      i += 1;
      for (;;) {
        if (i >= line.length) throw new Error('unterminated quote');
        if (line[i] === '"' && line[i + 1] === '"') { field += '"'; i += 2; continue; }
        if (line[i] === '"') { i += 1; break; }
        field += line[i]; i += 1;
      }
      if (i < line.length && line[i] !== ',') throw new Error(`text after a closing quote at ${i}`);
    } else {
      const end = line.indexOf(',', i);
      const stop = end === -1 ? line.length : end;
      field = line.slice(i, stop);
      i = stop;
    }
    fields.push(field);
    if (i >= line.length) return fields;
    i += 1;
  }
}

function formatField(value) {
  const s = String(value);
  if (/[",\n]/.test(s) || /^ | $/.test(s)) return `"${s.replace(/"/g, '""')}"`;
  return s;
}

function formatLine(fields) {
  return fields.map(formatField).join(',');
}

module.exports = { parseLine, formatLine };
