#!/usr/bin/env node
// bench/models/ort_bench.js - ONNX Runtime (npm onnxruntime-node) on a model.
//
//   node ort_bench.js MODEL.onnx INPUT.npy THREADS REPEAT WARMUP [OUTPUT.npy]
//                     [--ort-dir DIR]
//
// The peer of issue 7's benchmark: runs the ONNX file on ONNX Runtime's CPU
// execution provider with intraOpNumThreads = THREADS, interOpNumThreads = 1,
// graphOptimizationLevel 'all' and sequential execution. The model's single
// input is fed from INPUT.npy (float32, C order); WARMUP runs, then REPEAT
// timed runs (wall time around each awaited session.run, so it includes the
// few microseconds of the Node binding), and prints one machine-readable line:
//   latency_ms median=12.345 min=12.001 mean=12.400 runs=30 threads=2
// OUTPUT.npy receives the first output (float32). onnxruntime-node is looked
// up in --ort-dir (where `npm install onnxruntime-node` ran; its node_modules
// folder), else through Node's usual resolution. Errors: a message on stderr
// and exit code 1.
'use strict';

const common = require('./ort_common.js');

const {fail, intArg} = common;
common.setProgram('ort_bench.js');

function parseArgs(argv) {
  const {pos, ortDir} = common.splitOrtDir(argv);
  if (pos.length < 5 || pos.length > 6)
    fail('usage: ort_bench.js MODEL.onnx INPUT.npy THREADS REPEAT WARMUP [OUTPUT.npy] ' +
         '[--ort-dir DIR]');
  const [model, input, threads, repeat, warmup, output] = pos;
  return {
    model, input, output, ortDir,
    threads: intArg('THREADS', threads, 1),
    repeat: intArg('REPEAT', repeat, 1),
    warmup: intArg('WARMUP', warmup, 0),
  };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = common.loadOrt(args.ortDir);
  const session = await common.createSession(ort, args.model, args.threads);
  if (session.inputNames.length !== 1) fail(`${args.model}: expected one input`);
  const x = common.readNpy(args.input);
  if (x.type !== 'float32') fail(`${args.input}: expected float32, got ${x.type}`);
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape)};
  const result = await common.timeRuns(session, feeds, args);
  if (args.output) {
    const out = result[session.outputNames[0]];
    if (out.type !== 'float32') fail(`output '${session.outputNames[0]}' is ${out.type}`);
    common.writeNpy(args.output, out);
  }
}

main().catch(e => fail(e && e.message ? e.message : String(e)));
