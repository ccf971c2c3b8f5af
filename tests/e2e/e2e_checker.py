"""The checker the end-to-end scripts share: counts passes and failures,
runs the tessera tool, compares arrays (ints and bool exactly, floats within
atol + rtol * |want|)."""

import os
import subprocess

import numpy as np


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

    def tool(self, *args, rc=0):
        """Runs tessera; its exit status must be `rc` (None: any)."""
        r = subprocess.run([self.tessera, *args], capture_output=True, text=True)
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
                       f"{int(bad.sum())} of {bad.size} differ; max |a-b| {np.abs(g - w).max():.3g}")
