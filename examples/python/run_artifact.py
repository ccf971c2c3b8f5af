#!/usr/bin/env python3
"""Run a compiled artifact from Python and check it against the reference interpreter.

    PYTHONPATH=build/release/python /usr/bin/python3 examples/python/run_artifact.py \\
        build/release/tiny_cnn.tsr examples/models/tiny_cnn.tir

`./dev.sh example` runs this after `tessera run`. The artifact runs through
tessera.runtime (libtessera_runtime alone); the model it was compiled from runs through
tessera.interpret (the reference interpreter); the outputs must agree.
"""
import sys
import time

import numpy as np

import tessera
import tessera.runtime as rt


def main(artifact_path, model_path):
    sess = rt.Session(artifact_path, threads=2)
    print(sess)
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.uniform(-1, 1, i.shape).astype(i.dtype) for i in sess.inputs}
    outputs = sess.run(feeds)
    reference = tessera.interpret(model_path, feeds)
    for name, value in outputs.items():
        err = float(np.max(np.abs(value - reference[name]))) if value.size else 0.0
        print(f"  {name}: {value.dtype}{list(value.shape)}, max |tessera - interpreter| = {err:.2e}")
        np.testing.assert_allclose(value, reference[name], rtol=1e-3, atol=1e-4)
    runs = 200
    start = time.perf_counter()
    for _ in range(runs):
        sess.run(feeds)
    print(f"Session.run from Python: {(time.perf_counter() - start) / runs * 1e6:.1f} us per run")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
