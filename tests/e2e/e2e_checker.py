"""What the end-to-end scripts share: the checker (counts passes and
failures, runs the tessera tool, compares arrays: ints and bool exactly,
floats within atol + rtol * |want|), the common command line (--tessera BIN
--source-dir DIR --out DIR), compile-then-run, `tessera inspect --json`,
`tessera interpret --print-all` parsed, backend-test folders for `tessera
conformance`, and the generated models (bench/models/make_models.py,
tests/onnx/make_cnn.py)."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np


class GraphParts:
    """The initializers and nodes of an ONNX graph being written with
    onnx.helper: const() adds an initializer, node() a node; each returns the
    name of what it made (a node: its first output), so calls nest."""

    def __init__(self):
        self.inits, self.nodes = [], []

    def const(self, name, value):
        from onnx import numpy_helper
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op, ins, outs, **kw):
        from onnx import helper
        self.nodes.append(helper.make_node(op, ins, outs, **kw))
        return outs[0]


class Checker:
    def __init__(self, tessera, out):
        self.tessera = tessera
        self.out = out
        self.passed = 0
        self.failed = 0

    def ok(self, cond, what, detail=""):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}" + (f"\n  {detail}" if detail else ""))
        return cond

    def tool(self, *args, rc=0, env=None):
        """Runs tessera (with `env` added to the environment); its exit
        status must be `rc` (None: any)."""
        r = subprocess.run([self.tessera, *args], capture_output=True, text=True,
                           env=None if env is None else {**os.environ, **env})
        if rc is not None and r.returncode != rc:
            raise RuntimeError(f"tessera {' '.join(args)}: exit {r.returncode} (wanted {rc})\n"
                               f"{r.stdout}{r.stderr}")
        return r

    def path(self, name):
        return os.path.join(self.out, name)

    def close(self, got, want, rtol, atol, what):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            return self.ok(False, what, f"shape {got.shape} vs {want.shape}")
        if got.dtype.kind in "biu" or want.dtype.kind in "biu":
            return self.ok(np.array_equal(got, want), what, f"{got.ravel()[:8]} vs {want.ravel()[:8]}")
        g, w = got.astype(np.float64), want.astype(np.float64)
        bad = ~(np.abs(g - w) <= atol + rtol * np.abs(w))
        return self.ok(not bad.any(), what,
                       f"{int(bad.sum())} of {bad.size} differ; max |a-b| {np.abs(g - w).max(initial=0):.3g}")

    def step(self, name, fn, errors=(RuntimeError,)):
        """Runs fn(); a failing command (one of `errors`) is a failure named
        "<name>: a command failed" ("a command failed" without a name).
        fn's result, None when it failed."""
        try:
            return fn()
        except errors as e:
            self.ok(False, f"{name}: a command failed" if name else "a command failed", str(e))
            return None

    def summary(self):
        """Prints the counts; the script's exit status."""
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0

    # -- the tessera tool ---------------------------------------------------

    def compile_run(self, model, label, compile_args=(), run_args=()):
        """`tessera compile model *compile_args -o <label>.tsr`, then `tessera
        run` on it in a fresh process with *run_args into <label>_out.npz;
        the outputs (np.load) and the artifact's path."""
        tsr = self.path(f"{label}.tsr")
        self.tool("compile", model, *compile_args, "-o", tsr)
        out = self.path(f"{label}_out.npz")
        self.tool("run", tsr, *run_args, "--outputs", out)
        return np.load(out), tsr

    def inspect(self, tsr):
        """`tessera inspect --json` of an artifact, parsed."""
        return json.loads(self.tool("inspect", tsr, "--json").stdout)

    def interpreted_outputs(self, model, seed):
        """The outputs `tessera interpret --print-all` prints, as float arrays."""
        text = self.tool("interpret", model, "--seed", str(seed), "--print-all").stdout
        outs = []
        for m in re.finditer(r"^output \d+: \w+\[([\d, ]*)\]\n  \[([^\]]*)\]", text, re.M):
            shape = [int(d) for d in m.group(1).split(",") if d.strip()]
            values = [float(v) for v in m.group(2).split(",")]
            outs.append(np.array(values).reshape(shape))
        return outs

    def backend_test(self, folder_name, model, x, outputs):
        """A backend-test folder for `tessera conformance`: model.onnx and one
        data set per entry of `outputs` (input "x", output "logits")."""
        import onnx
        from onnx import numpy_helper

        folder = self.path(folder_name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        shutil.copyfile(model, os.path.join(folder, "model.onnx"))
        for i, out in enumerate(outputs):
            ds = os.path.join(folder, f"test_data_set_{i}")
            os.makedirs(ds)
            onnx.save_tensor(numpy_helper.from_array(x, "x"), os.path.join(ds, "input_0.pb"))
            onnx.save_tensor(numpy_helper.from_array(out, "logits"),
                             os.path.join(ds, "output_0.pb"))
        return folder

    def backend_folder(self, name, model_path, inputs, outputs):
        """A backend-test folder (model.onnx, test_data_set_0) for `tessera
        conformance`, which runs the reference interpreter on it; `inputs`
        and `outputs` map names to arrays, in the model's order."""
        import onnx
        from onnx import numpy_helper

        folder = self.path(name)
        shutil.rmtree(folder, ignore_errors=True)
        ds = os.path.join(folder, "test_data_set_0")
        os.makedirs(ds)
        shutil.copyfile(model_path, os.path.join(folder, "model.onnx"))
        for i, (n, a) in enumerate(inputs.items()):
            onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(ds, f"input_{i}.pb"))
        for i, (n, a) in enumerate(outputs.items()):
            onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(ds, f"output_{i}.pb"))
        return folder

    def conformance(self, folder, what):
        """`tessera conformance` on a one-model folder must pass."""
        conf = self.tool("conformance", folder, "--verbose", rc=None).stdout
        last = conf.strip().splitlines()[-1] if conf.strip() else ""
        return self.ok(last == "1 passed, 0 failed, 0 unsupported", what, conf)


def checker_from_args(*extra):
    """Parses --tessera BIN --source-dir DIR --out DIR (and the options in
    `extra`: (flag, argparse keywords) pairs), creates --out; the arguments
    and a Checker."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--source-dir", required=True)
    for flag, kwargs in extra:
        ap.add_argument(flag, **kwargs)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    return a, Checker(a.tessera, a.out)


def make_models(source_dir, out, size, width, *extra, **run_kwargs):
    """Writes bench/models/make_models.py's networks (<name>.onnx and a seeded
    <name>_input.npy) into `out`."""
    make = os.path.join(source_dir, "bench", "models", "make_models.py")
    subprocess.run([sys.executable, make, "--out", out, "--size", str(size), "--width", str(width),
                    *extra], check=True, **run_kwargs)


def onnx_cnn(c, source_dir):
    """tests/onnx/make_cnn.py's CNN saved as cnn.onnx and a seeded input saved
    as cnn_x.npy; (the model, its path, NumPy's outputs on that input)."""
    sys.path.insert(0, os.path.join(source_dir, "tests", "onnx"))
    import make_cnn  # noqa: E402
    import onnx

    w = make_cnn.weights()
    model = make_cnn.build_model(w)
    path = c.path("cnn.onnx")
    onnx.save(model, path)
    x = np.random.default_rng(2).standard_normal(make_cnn.SHAPE).astype(np.float32)
    np.save(c.path("cnn_x.npy"), x)
    return model, path, make_cnn.reference(x, w)
