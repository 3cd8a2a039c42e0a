'use strict';

// A text template with {{ name }} placeholders.
function render(template, vars) {
  throw new Error('not implemented');
}

module.exports = { render };
