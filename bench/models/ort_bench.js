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

const fs = require('fs');
const path = require('path');

function fail(msg) {
  process.stderr.write(`ort_bench.js: ${msg}\n`);
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
    fail('usage: ort_bench.js MODEL.onnx INPUT.npy THREADS REPEAT WARMUP [OUTPUT.npy] ' +
         '[--ort-dir DIR]');
  const [model, input, threads, repeat, warmup, output] = pos;
  const int = (name, v, min) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) fail(`${name} must be an integer >= ${min}, not '${v}'`);
    return n;
  };
  return {
    model, input, output, ortDir,
    threads: int('THREADS', threads, 1),
    repeat: int('REPEAT', repeat, 1),
    warmup: int('WARMUP', warmup, 0),
  };
}

// .npy (format 1-3, '<f4', C order) -> {shape, data: Float32Array}.
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
  if (descr[1] !== '<f4') fail(`${file}: dtype '${descr[1]}', expected '<f4' (float32)`);
  if (fortran[1] === 'True') fail(`${file}: Fortran-order arrays are not supported`);
  const dims = shape[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const numel = dims.reduce((a, b) => a * b, 1);
  const offset = start + headerLen;
  if (buf.length < offset + 4 * numel) fail(`${file}: truncated data`);
  // Copy to an aligned buffer: the data offset need not be a multiple of 4.
  const data = new Float32Array(numel);
  Buffer.from(data.buffer).set(buf.subarray(offset, offset + 4 * numel));
  return {shape: dims, data};
}

// {shape, data: Float32Array} -> .npy format 1.0.
function writeNpy(file, shape, data) {
  const shapeStr = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shapeStr}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
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
  if (session.inputNames.length !== 1) fail(`${args.model}: expected one input`);
  const x = readNpy(args.input);
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape)};

  for (let i = 0; i < args.warmup; ++i) await session.run(feeds);
  const ms = [];
  let result;
  for (let i = 0; i < args.repeat; ++i) {
    const start = process.hrtime.bigint();
    result = await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  if (args.output) {
    const out = result[session.outputNames[0]];
    if (out.type !== 'float32') fail(`output '${session.outputNames[0]}' is ${out.type}`);
    writeNpy(args.output, out.dims.map(Number), out.data);
  }
  const sorted = [...ms].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  const mean = ms.reduce((a, b) => a + b, 0) / n;
  console.log(`latency_ms median=${median.toFixed(3)} min=${sorted[0].toFixed(3)} ` +
              `mean=${mean.toFixed(3)} runs=${n} threads=${args.threads}`);
}

main().catch(e => fail(e && e.message ? e.message : String(e)));
