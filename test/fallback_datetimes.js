// js-bson's side of the fallback datetimes (README, "Values without a BSON
// mapping"): every datetime in the documents given as hex lines on stdin
// must decode to a valid Date, as pymongo's side is checked by
// test/crosscheck_encode_rows.py.  scripts/test.sh runs it (installing the
// npm package bson under its cache); by hand:
//
//   PGOPTIONS='-c bson_out.unmappable_values=fallback' psql -AtX -c \
//     "SELECT encode(row_to_bson(ROW('infinity'::timestamptz, '-infinity'::date)), 'hex')" |
//     NODE_PATH=<dir>/node_modules node test/fallback_datetimes.js
//
// prints each datetime and exits 1 if any is an Invalid Date.
const { deserialize } = require('bson');

let input = '';
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', () => {
  let bad = 0;
  const walk = (v, path) => {
    if (v instanceof Date) {
      const ok = !Number.isNaN(v.getTime());
      console.log(`${path}: ${ok ? v.toISOString() + ' (' + v.getTime() + ' ms)' : 'Invalid Date'}`);
      if (!ok) bad++;
    } else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) walk(x, path ? `${path}.${k}` : k);
    }
  };
  for (const line of input.split('\n').filter((l) => l.trim() !== '')) {
    walk(deserialize(Buffer.from(line.trim(), 'hex')), '');
  }
  process.exit(bad ? 1 : 0);
});
