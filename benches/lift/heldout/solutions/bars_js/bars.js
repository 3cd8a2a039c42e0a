'use strict';

// Numbers drawn as text: a bar chart, and a sparkline.
function renderBars(rows, width) {
  if (width < 1) throw new RangeError('width must be at least 1');
  if (rows.some(([, v]) => v < 0)) throw new RangeError('values must not be negative');
  const max = Math.max(0, ...rows.map(([, v]) => v));
  const pad = Math.max(0, ...rows.map(([l]) => l.length));
  return rows.map(([label, value]) => {
    const n = max === 0 ? 0 : Math.round((value / max) * width);
    return `${label.padEnd(pad)} | ${'#'.repeat(n).padEnd(width)} ${value}`;
  }).join('\n');
}

const TICKS = '▁▂▃▄▅▆▇█';

function sparkline(values) {
  const min = Math.min(...values);
  const max = Math.max(...values);
  return values.map((v) => TICKS[max === min ? 0 : Math.round(((v - min) / (max - min)) * 7)]).join('');
}

module.exports = { renderBars, sparkline };
