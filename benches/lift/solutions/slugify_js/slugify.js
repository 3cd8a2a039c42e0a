'use strict';

function slugify(title) {
  let s = title.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase();
  s = s.replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
  if (s.length <= 40) return s;
  const cut = s.slice(0, 41).lastIndexOf('-');
  return cut > 0 ? s.slice(0, cut) : s.slice(0, 40);
}

module.exports = { slugify };
