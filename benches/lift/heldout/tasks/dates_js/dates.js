'use strict';

// Calendar dates written YYYY-MM-DD: ranges, weekdays, months.
function expandRange(spec) {
  throw new Error('not implemented');
}

function countWeekdays(from, to) {
  throw new Error('not implemented');
}

function addMonths(date, n) {
  throw new Error('not implemented');
}

module.exports = { expandRange, countWeekdays, addMonths };
