'use strict';

// A text template with {{ name }} placeholders.
function lookup(vars, path) {
  let value = vars;
  for (const key of path.split('.')) {
    if (value === undefined || value === null) return undefined;
    value = value[key];
  }
  return value;
}

function render(template, vars) {
  let out = '';
  let i = 0;
  while (i < template.length) {
    if (template.startsWith('\\{{', i)) { out += '{{'; i += 3; continue; }
    if (!template.startsWith('{{', i)) { out += template[i]; i += 1; continue; }
    const end = template.indexOf('}}', i + 2);
    if (end === -1) throw new Error(`unclosed {{ at ${i}`);
    const inner = template.slice(i + 2, end);
    const bar = inner.indexOf('|');
    const name = (bar === -1 ? inner : inner.slice(0, bar)).trim();
    const value = lookup(vars, name);
    if (value === undefined || value === null) {
      if (bar === -1) throw new Error(`no value for ${name}`);
      out += inner.slice(bar + 1);
    } else {
      out += String(value);
    }
    i = end + 2;
  }
  return out;
}

module.exports = { render };
