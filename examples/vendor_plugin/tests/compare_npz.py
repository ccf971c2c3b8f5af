#!/usr/bin/env python3
"""compare_npz.py EXPECTED.npz ACTUAL.npz [--rtol R] [--atol A]

Compares the outputs two `tessera run --outputs X.npz` wrote: the same
members (one per model output), the same dtypes and shapes, and every
element within |actual - expected| <= atol + rtol * |expected| (NaN only
where NaN is expected). Prints one line per output and a verdict; exits 1
on any mismatch. Python's standard library only (no numpy), so a vendor's
test machine needs nothing but python3, which lit needs anyway.
"""
import argparse
import ast
import math
import struct
import sys
import zipfile

# The dtypes `tessera run` writes for the types acme takes; extend as your
# plugin grows (bf16 is written as '<u2' and would need converting first).
FORMATS = {"<f4": "f", "<f8": "d", "<f2": "e", "<i4": "i", "<i8": "q", "|i1": "b", "|u1": "B",
           "|b1": "?"}


def read_npy(data, where):
    if data[:6] != b"\x93NUMPY":
        sys.exit(f"{where}: not a .npy member")
    major = data[6]
    if major == 1:
        (hlen,), start = struct.unpack("<H", data[8:10]), 10
    else:
        (hlen,), start = struct.unpack("<I", data[8:12]), 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    descr, shape = header["descr"], tuple(header["shape"])
    if header.get("fortran_order"):
        sys.exit(f"{where}: fortran_order is not supported")
    if descr not in FORMATS:
        sys.exit(f"{where}: dtype {descr} is not supported by this script")
    count = math.prod(shape)
    values = struct.unpack(f"<{count}{FORMATS[descr]}", data[start + hlen:])
    return descr, shape, values


def read_npz(path):
    with zipfile.ZipFile(path) as z:
        return {name.removesuffix(".npy"): read_npy(z.read(name), f"{path}:{name}")
                for name in z.namelist()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("expected")
    p.add_argument("actual")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--atol", type=float, default=1e-6)
    a = p.parse_args()
    expected, actual = read_npz(a.expected), read_npz(a.actual)
    if sorted(expected) != sorted(actual):
        print(f"MISMATCH outputs: expected {sorted(expected)}, got {sorted(actual)}")
        return 1
    bad = 0
    for name in sorted(expected):
        (edt, esh, ev), (adt, ash, av) = expected[name], actual[name]
        if (edt, esh) != (adt, ash):
            print(f"MISMATCH output '{name}': expected {edt}{list(esh)}, got {adt}{list(ash)}")
            bad += 1
            continue
        worst, wrong = 0.0, []
        for i, (e, v) in enumerate(zip(ev, av)):
            if isinstance(e, float) and (math.isnan(e) or math.isnan(v)):
                ok = math.isnan(e) and math.isnan(v)
            else:
                diff = abs(v - e)
                worst = max(worst, diff)
                ok = diff <= a.atol + a.rtol * abs(e)
            if not ok:
                wrong.append(i)
        if wrong:
            i = wrong[0]
            print(f"MISMATCH output '{name}' {adt}{list(esh)}: {len(wrong)} of {len(ev)} elements "
                  f"differ; first at flat index {i}: expected {ev[i]}, got {av[i]}")
            bad += 1
        else:
            print(f"same output '{name}' {adt}{list(esh)}: {len(ev)} elements, "
                  f"max abs diff {worst:.3g}")
    print(f"{'FAIL' if bad else 'OK'}: {len(expected) - bad} of {len(expected)} outputs match "
          f"(rtol {a.rtol:g}, atol {a.atol:g})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
