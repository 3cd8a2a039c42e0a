'use strict';

// Items taken out by priority, first in first out among equals.
class PriorityQueue {
  constructor(options = {}) {
    throw new Error('not implemented');
  }
}

module.exports = { PriorityQueue };
