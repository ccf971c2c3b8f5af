#!/usr/bin/env python3
"""The .npy/.npz reader and writer (core/tools/npy.h) against NumPy itself.

Writes files with NumPy (format versions 1, 2 and 3, Fortran order,
big-endian, np.savez and np.savez_compressed of every supported dtype) into
--dir, runs the hidden unit test "[.npy-numpy]" that reads them and writes
its own files there, then reads those back with NumPy and checks them.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

DTYPES = ["<f4", "<f2", "<f8", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--unit-tests", required=True, help="the tessera_unit_tests binary")
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for version in (1, 2, 3):
        with open(os.path.join(a.dir, f"v{version}.npy"), "wb") as f:
            np.lib.format.write_array(f, x, version=(version, 0))
    np.save(os.path.join(a.dir, "fortran.npy"),
            np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4)))
    np.save(os.path.join(a.dir, "big.npy"), x.astype(">f4"))

    members = {}
    for i, d in enumerate(DTYPES):
        base = np.arange(150).reshape(3, 50)
        members[f"t{i}"] = (base % 2).astype(d) if d == "|b1" else (base % 100).astype(d)
    np.savez(os.path.join(a.dir, "all.npz"), **members)
    np.savez_compressed(os.path.join(a.dir, "all_compressed.npz"), **members)

    env = dict(os.environ, TESSERA_NPY_DIR=a.dir)
    rc = subprocess.run([a.unit_tests, "[.npy-numpy]"], env=env).returncode
    if rc != 0:
        print("FAIL: the unit test failed")
        return 1

    failures = 0
    ours = np.load(os.path.join(a.dir, "ours.npz"))
    if list(ours.keys()) != [f"t{i}" for i in range(len(DTYPES))]:
        print("FAIL: member names", list(ours.keys()))
        failures += 1
    for i, d in enumerate(DTYPES):
        arr = ours[f"t{i}"]
        raw = bytes((j * 7 + 1) & 0xFF for j in range(arr.nbytes))
        if d == "|b1":
            raw = bytes(b & 1 for b in raw)
        if arr.dtype != np.dtype(d) or arr.shape != (2, 3) or arr.tobytes() != raw:
            print(f"FAIL: ours.npz t{i}: {arr.dtype} {arr.shape}")
            failures += 1
    single = np.load(os.path.join(a.dir, "ours.npy"))
    if single.dtype != np.float64 or single.shape != (4, 1):
        print("FAIL: ours.npy", single.dtype, single.shape)
        failures += 1
    print(f"{len(DTYPES) + 1 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
