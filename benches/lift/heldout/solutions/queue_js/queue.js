'use strict';

// Items taken out by priority, first in first out among equals.
class PriorityQueue {
  constructor(options = {}) {
    this.compare = options.compare || ((a, b) => a - b);
    this.heap = [];
    this.pushed = 0;
  }

  get size() { return this.heap.length; }

  before(i, j) {
    const a = this.heap[i];
    const b = this.heap[j];
    const c = this.compare(a.priority, b.priority);
    return c < 0 || (c === 0 && a.seq < b.seq);
  }

  swap(i, j) { [this.heap[i], this.heap[j]] = [this.heap[j], this.heap[i]]; }

  push(item, priority) {
    this.heap.push({ item, priority, seq: this.pushed++ });
    let i = this.heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  peek() { return this.heap.length ? this.heap[0].item : undefined; }

  pop() {
    if (!this.heap.length) return undefined;
    const top = this.heap[0].item;
    const last = this.heap.pop();
    if (this.heap.length) {
      this.heap[0] = last;
      let i = 0;
      for (;;) {
        let best = i;
        for (const child of [2 * i + 1, 2 * i + 2]) {
          if (child < this.heap.length && this.before(child, best)) best = child;
        }
        if (best === i) break;
        this.swap(i, best);
        i = best;
      }
    }
    return top;
  }

  drain() {
    const out = [];
    while (this.heap.length) out.push(this.pop());
    return out;
  }
}

module.exports = { PriorityQueue };
