'use strict';

// A URL slug for a title.
function slugify(title) {
  throw new Error('not implemented');
}

module.exports = { slugify };
