'use strict';

// One line of CSV: read into fields, and written from them.
function parseLine(line) {
  throw new Error('not implemented');
}

function formatLine(fields) {
  throw new Error('not implemented');
}

module.exports = { parseLine, formatLine };
