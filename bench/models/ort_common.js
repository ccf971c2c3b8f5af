// bench/models/ort_common.js - what the ONNX Runtime drivers share.
//
// Used by bench/models/ort_bench.js (issue 7's comparison) and
// bench/zoo/ort_run.js (the zoo): .npy files in and out, loading
// onnxruntime-node, the session options of the comparisons and the timed
// loop with its one machine-readable line. Errors go through `fail`
// (message, exit code 1), which each driver names.
'use strict';

const fs = require('fs');
const path = require('path');

let program = 'ort';

function fail(msg) {
  process.stderr.write(`${program}: ${msg}\n`);
  process.exit(1);
}

/// Names the program in error messages.
function setProgram(name) {
  program = name;
}

// ORT tensor type <-> .npy descr and typed array.
const DTYPES = {
  float32: {descr: '<f4', array: Float32Array},
  float64: {descr: '<f8', array: Float64Array},
  int64: {descr: '<i8', array: BigInt64Array},
  int32: {descr: '<i4', array: Int32Array},
  bool: {descr: '|b1', array: Uint8Array},
};

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

/// A CPU session as the comparisons use it: THREADS intra-op threads, one
/// inter-op thread, every graph optimisation, sequential execution.
function createSession(ort, model, threads) {
  return ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
}

/// WARMUP runs, then REPEAT timed ones (wall time around each awaited run);
/// prints `latency_ms median=... min=... mean=... runs=N threads=T` and
/// returns the last result.
async function timeRuns(session, feeds, {warmup, repeat, threads}) {
  for (let i = 0; i < warmup; ++i) await session.run(feeds);
  const ms = [];
  let result;
  for (let i = 0; i < repeat; ++i) {
    const start = process.hrtime.bigint();
    result = await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const sorted = [...ms].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  const mean = ms.reduce((a, b) => a + b, 0) / n;
  console.log(`latency_ms median=${median.toFixed(3)} min=${sorted[0].toFixed(3)} ` +
              `mean=${mean.toFixed(3)} runs=${n} threads=${threads}`);
  return result;
}

/// The positional arguments and `--ort-dir DIR` (default: $ORT_DIR).
function splitOrtDir(argv) {
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
  return {pos, ortDir};
}

/// An integer argument of at least `min`.
function intArg(name, v, min) {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) fail(`${name} must be an integer >= ${min}, not '${v}'`);
  return n;
}

module.exports = {
  fail, setProgram, splitOrtDir, intArg, readNpy, writeNpy, loadOrt, createSession, timeRuns,
};
