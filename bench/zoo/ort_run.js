#!/usr/bin/env node
// bench/zoo/ort_run.js - ONNX Runtime (npm onnxruntime-node) on a zoo model.
//
//   node ort_run.js MODEL.onnx NAME=FILE.npy[,NAME=FILE.npy...] THREADS REPEAT WARMUP
//                   [OUTDIR] [--ort-dir DIR]
//
// The peer of bench/zoo/run.py, as bench/models/ort_bench.js is of issue 7's
// benchmark, for models with several inputs and outputs: runs the ONNX file
// on ONNX Runtime's CPU execution provider with intraOpNumThreads = THREADS,
// interOpNumThreads = 1, graphOptimizationLevel 'all' and sequential
// execution. Every model input is fed from its .npy file (C order; dtype
// float32 '<f4', int64 '<i8', int32 '<i4', float64 '<f8' or bool '|b1').
// WARMUP runs, then REPEAT timed runs (wall time around each awaited
// session.run, so it includes the few microseconds of the Node binding), and
// one machine-readable line:
//   latency_ms median=12.345 min=12.001 mean=12.400 runs=30 threads=2
// OUTDIR receives every output as OUTDIR/<output name>.npy, in its own dtype
// (one of those above). onnxruntime-node is looked up in --ort-dir (where
// `npm install onnxruntime-node` ran; its node_modules folder), else through
// Node's usual resolution. Errors: a message on stderr and exit code 1.
'use strict';

const fs = require('fs');
const path = require('path');
const common = require('../models/ort_common.js');

const {fail, intArg} = common;
common.setProgram('ort_run.js');

function parseArgs(argv) {
  const {pos, ortDir} = common.splitOrtDir(argv);
  if (pos.length < 5 || pos.length > 6)
    fail('usage: ort_run.js MODEL.onnx NAME=FILE.npy[,...] THREADS REPEAT WARMUP [OUTDIR] ' +
         '[--ort-dir DIR]');
  const [model, inputs, threads, repeat, warmup, outDir] = pos;
  const feeds = inputs.split(',').filter(s => s).map(s => {
    const eq = s.indexOf('=');
    if (eq <= 0) fail(`inputs must be NAME=FILE.npy, not '${s}'`);
    return {name: s.slice(0, eq), file: s.slice(eq + 1)};
  });
  return {
    model, feeds, outDir, ortDir,
    threads: intArg('THREADS', threads, 1),
    repeat: intArg('REPEAT', repeat, 1),
    warmup: intArg('WARMUP', warmup, 0),
  };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = common.loadOrt(args.ortDir);
  const session = await common.createSession(ort, args.model, args.threads);
  const feeds = {};
  for (const {name, file} of args.feeds) {
    if (!session.inputNames.includes(name))
      fail(`${args.model} has no input '${name}' (inputs: ${session.inputNames.join(', ')})`);
    const x = common.readNpy(file);
    feeds[name] = new ort.Tensor(x.type, x.data, x.shape);
  }
  const missing = session.inputNames.filter(n => !(n in feeds));
  if (missing.length) fail(`no value for the inputs ${missing.join(', ')}`);
  const result = await common.timeRuns(session, feeds, args);
  if (args.outDir) {
    fs.mkdirSync(args.outDir, {recursive: true});
    for (const name of session.outputNames)
      common.writeNpy(path.join(args.outDir, `${name}.npy`), result[name]);
  }
}

main().catch(e => fail(e && e.message ? e.message : String(e)));
