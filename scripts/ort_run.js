#!/usr/bin/env node
// Runs an ONNX model in ONNX Runtime (the CPU build of the npm package
// onnxruntime-node) on inputs salt-cpp wrote, one session.run per jet, as Athena
// calls it. Used by `salt to_onnx` for its check and by bench/onnx_bench.sh.
//   node scripts/ort_run.js MODEL.onnx INPUTS.json OUTPUTS.json [--threads N] [--repeat R]
// INPUTS.json:  {"jets": [{"<input>": {"dims": [...], "data": [...]}, ...}, ...]}
// OUTPUTS.json: {"jets": [{"<output>": {"dims": [...], "data": [...]}, ...}], "runs": R,
//                "seconds": wall time of the R timed passes, "jets_per_second": ...}
// The package is looked up in $SALT_ORT_DIR, then in ort/ next to scripts/ (an
// installed salt's share/salt), then in .ort/ (the source tree, scripts/bootstrap.sh).
'use strict';
const fs = require('fs');
const path = require('path');

function loadOrt() {
  const dirs = [process.env.SALT_ORT_DIR, path.join(__dirname, '..', 'ort'), path.join(__dirname, '..', '.ort')].filter(Boolean);
  for (const d of dirs) {
    const p = path.join(d, 'node_modules', 'onnxruntime-node');
    if (fs.existsSync(p)) return require(p);
  }
  throw new Error('onnxruntime-node not found in ' + dirs.join(', ') + ' (run scripts/bootstrap.sh)');
}

function tensorFor(ort, spec) {
  const isInt = spec.type === 'int64';
  const data = isInt ? BigInt64Array.from(spec.data.map(BigInt)) : Float32Array.from(spec.data);
  return new ort.Tensor(isInt ? 'int64' : 'float32', data, spec.dims);
}

async function main() {
  const args = process.argv.slice(2);
  const flag = (name, def) => {
    const i = args.indexOf(name);
    if (i < 0) return def;
    const v = Number(args[i + 1]);
    args.splice(i, 2);
    return v;
  };
  const threads = flag('--threads', 1), repeat = flag('--repeat', 0);
  if (args.length !== 3) throw new Error('usage: ort_run.js MODEL INPUTS.json OUTPUTS.json [--threads N] [--repeat R]');
  const [model, inputsPath, outputsPath] = args;
  const ort = loadOrt();
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1,
    executionMode: 'sequential', logSeverityLevel: 3,
  });
  const jets = JSON.parse(fs.readFileSync(inputsPath, 'utf8')).jets;
  const feeds = jets.map((jet) => {
    const f = {};
    for (const [name, spec] of Object.entries(jet)) f[name] = tensorFor(ort, spec);
    return f;
  });
  const results = [];
  for (const f of feeds) {
    const out = await session.run(f);
    const jet = {};
    for (const name of session.outputNames) {
      const t = out[name];
      jet[name] = { dims: Array.from(t.dims), type: t.type, data: Array.from(t.data, Number) };
    }
    results.push(jet);
  }
  let seconds = 0;
  if (repeat > 0) {
    const start = process.hrtime.bigint();
    for (let r = 0; r < repeat; ++r) for (const f of feeds) await session.run(f);
    seconds = Number(process.hrtime.bigint() - start) / 1e9;
  }
  const summary = { jets: results, runs: repeat, seconds, jets_per_second: seconds > 0 ? (repeat * feeds.length) / seconds : 0,
                    ort_version: ort.env.versions ? ort.env.versions.common : 'unknown' };
  const tmp = outputsPath + '.tmp.' + process.pid;
  fs.writeFileSync(tmp, JSON.stringify(summary));
  fs.renameSync(tmp, outputsPath);
}

main().catch((e) => {
  process.stderr.write('ort_run: ' + String(e.message || e).split('\n')[0] + '\n');
  process.exit(1);
});
