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

// ORT tensor type <-> .npy descr and typed array.
const DTYPES = {
  float32: {descr: '<f4', array: Float32Array},
  float64: {descr: '<f8', array: Float64Array},
  int64: {descr: '<i8', array: BigInt64Array},
  int32: {descr: '<i4', array: Int32Array},
  bool: {descr: '|b1', array: Uint8Array},
};

function fail(msg) {
  process.stderr.write(`ort_run.js: ${msg}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const pos = [];
  let ortDir = process.env.ORT_DIR || '';
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--ort-dir') {
      if (i + 1 >= argv.length) fail('--ort-dir needs a value');
      ortDir = argv[++i];
    } else {
      pos.push(argv[i]);
    }
  }
  if (pos.length < 5 || pos.length > 6)
    fail('usage: ort_run.js MODEL.onnx NAME=FILE.npy[,...] THREADS REPEAT WARMUP [OUTDIR] ' +
         '[--ort-dir DIR]');
  const [model, inputs, threads, repeat, warmup, outDir] = pos;
  const int = (name, v, min) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) fail(`${name} must be an integer >= ${min}, not '${v}'`);
    return n;
  };
  const feeds = inputs.split(',').filter(s => s).map(s => {
    const eq = s.indexOf('=');
    if (eq <= 0) fail(`inputs must be NAME=FILE.npy, not '${s}'`);
    return {name: s.slice(0, eq), file: s.slice(eq + 1)};
  });
  return {
    model, feeds, outDir, ortDir,
    threads: int('THREADS', threads, 1),
    repeat: int('REPEAT', repeat, 1),
    warmup: int('WARMUP', warmup, 0),
  };
}

// .npy (format 1-3, C order, a dtype of DTYPES) -> {type, shape, data}.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY')
    fail(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) fail(`${file}: cannot parse the header '${header.trim()}'`);
  const type = Object.keys(DTYPES).find(t => DTYPES[t].descr === descr[1]);
  if (!type) fail(`${file}: dtype '${descr[1]}' is not supported`);
  if (fortran[1] === 'True') fail(`${file}: Fortran-order arrays are not supported`);
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const numel = dims.reduce((a, b) => a * b, 1);
  const Array = DTYPES[type].array;
  const bytes = Array.BYTES_PER_ELEMENT * numel;
  const offset = start + headerLen;
  if (buf.length < offset + bytes) fail(`${file}: truncated data`);
  // Copy to an aligned buffer: the data offset need not be a multiple of 8.
  const data = new Array(numel);
  Buffer.from(data.buffer).set(buf.subarray(offset, offset + bytes));
  return {type, shape: dims, data};
}

// An ORT tensor -> .npy format 1.0 in its own dtype.
function writeNpy(file, tensor) {
  const dtype = DTYPES[tensor.type];
  if (!dtype) fail(`${file}: output type ${tensor.type} is not supported`);
  const shape = tensor.dims.map(Number);
  const shapeStr = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${dtype.descr}', 'fortran_order': False, 'shape': ${shapeStr}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

function loadOrt(ortDir) {
  const where = ortDir ? [path.resolve(ortDir)] : undefined;
  try {
    return require(require.resolve('onnxruntime-node', where ? {paths: where} : undefined));
  } catch (e) {
    fail(`cannot load onnxruntime-node${ortDir ? ` from ${ortDir}` : ''}: ${e.message}`);
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = loadOrt(args.ortDir);
  const session = await ort.InferenceSession.create(args.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
  const feeds = {};
  for (const {name, file} of args.feeds) {
    if (!session.inputNames.includes(name))
      fail(`${args.model} has no input '${name}' (inputs: ${session.inputNames.join(', ')})`);
    const x = readNpy(file);
    feeds[name] = new ort.Tensor(x.type, x.data, x.shape);
  }
  const missing = session.inputNames.filter(n => !(n in feeds));
  if (missing.length) fail(`no value for the inputs ${missing.join(', ')}`);

  for (let i = 0; i < args.warmup; ++i) await session.run(feeds);
  const ms = [];
  let result;
  for (let i = 0; i < args.repeat; ++i) {
    const start = process.hrtime.bigint();
    result = await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  if (args.outDir) {
    fs.mkdirSync(args.outDir, {recursive: true});
    for (const name of session.outputNames)
      writeNpy(path.join(args.outDir, `${name}.npy`), result[name]);
  }
  const sorted = [...ms].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  const mean = ms.reduce((a, b) => a + b, 0) / n;
  console.log(`latency_ms median=${median.toFixed(3)} min=${sorted[0].toFixed(3)} ` +
              `mean=${mean.toFixed(3)} runs=${n} threads=${args.threads}`);
}

main().catch(e => fail(e && e.message ? e.message : String(e)));
