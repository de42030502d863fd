#!/usr/bin/env node
// js-bson reference for the bson_out benchmark: BSON.serialize only, one core.
//
//   node bench/jsbson.js --reps 9 --out jsbson.csv medium=/path/medium.jsonl small=...
//
// Each input file holds one document per line as jsonb's text output (doc::text,
// exported by bench/run.sh in id order).  Parsing happens once, untimed.  Then
// one warm-up pass per table and --reps timed rounds; within a round the tables
// are interleaved.  A pass serializes every document of the table once; the
// CSV gets one line per (round, table): docs, BSON bytes produced, milliseconds.
//
// Note: JSON.parse turns every number into a JS double, so js-bson writes an
// integer outside int32 (the medium documents' "big") as a BSON double where
// to_bson writes an int64 (8 bytes either way), and an integral decimal such as
// 82.0 as an int32; the BSON sizes differ by a few bytes a document at most.
'use strict';
const fs = require('fs');
const { BSON } = require('bson');

function parseArgs(argv) {
  const a = { reps: 9, out: null, inputs: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--reps') a.reps = parseInt(argv[++i], 10);
    else if (argv[i] === '--out') a.out = argv[++i];
    else {
      const eq = argv[i].indexOf('=');
      if (eq < 1) throw new Error('expected TABLE=FILE, got ' + argv[i]);
      a.inputs.push({ table: argv[i].slice(0, eq), file: argv[i].slice(eq + 1) });
    }
  }
  if (!a.inputs.length) throw new Error('no input files');
  return a;
}

function load(file) {
  const text = fs.readFileSync(file, 'utf8');
  const docs = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    if (end > start) docs.push(JSON.parse(text.slice(start, end)));
    start = end + 1;
  }
  return docs;
}

function pass(docs) {
  let bytes = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < docs.length; i++) bytes += BSON.serialize(docs[i]).length;
  const t1 = process.hrtime.bigint();
  return { bytes, ms: Number(t1 - t0) / 1e6 };
}

function median(xs) {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const sets = args.inputs.map(({ table, file }) => ({ table, docs: load(file) }));
  const lines = ['round,table,docs,bson_bytes,ms'];
  for (const s of sets) pass(s.docs); // warm-up: lets V8 optimise serialize
  const per = {};
  for (let r = 1; r <= args.reps; r++) {
    for (const s of sets) {
      const { bytes, ms } = pass(s.docs);
      lines.push([r, s.table, s.docs.length, bytes, ms.toFixed(3)].join(','));
      (per[s.table] = per[s.table] || []).push({ bytes, ms });
    }
  }
  if (args.out) fs.writeFileSync(args.out, lines.join('\n') + '\n');
  else process.stdout.write(lines.join('\n') + '\n');
  for (const s of sets) {
    const p = per[s.table];
    const ms = median(p.map((x) => x.ms));
    const mbs = p[0].bytes / 1e6 / (ms / 1e3);
    process.stderr.write(`   js-bson ${s.table}: ${s.docs.length} docs, ` +
      `${(p[0].bytes / 1e6).toFixed(1)} MB BSON, median ${ms.toFixed(1)} ms/pass, ${mbs.toFixed(1)} MB/s\n`);
  }
}

main();
