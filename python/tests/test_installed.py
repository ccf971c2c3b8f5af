"""`cmake --install` puts the package where the prefix's Python finds it, and the
installed package works on its own: the extensions find the installed
libtessera_runtime through their RPATH and the runtime the installed plugins."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tessera
import tessera.runtime as rt


def test_installed_package(models, tmp_path):
    build = os.environ.get("TESSERA_BUILD_DIR")
    if not build:
        pytest.fail("TESSERA_BUILD_DIR must name the build tree (ctest sets it)")
    prefix = tmp_path / "prefix"
    r = subprocess.run([shutil.which("cmake") or "cmake", "--install", build, "--prefix",
                        str(prefix)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    site = prefix / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "dist-packages"
    assert (site / "tessera" / "__init__.py").exists(), sorted(os.listdir(prefix / "lib"))

    x = np.random.default_rng(7).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    want = rt.Session(tessera.compile(models["cnn"], targets=["dnnl"])).run({"x": x})
    script = textwrap.dedent(f"""
        import numpy as np, tessera, tessera.runtime as rt
        assert tessera.__file__.startswith({str(site)!r}), tessera.__file__
        dnnl = [p for p in tessera.plugins().loaded if p["name"] == "dnnl"]
        assert dnnl and dnnl[0]["path"].startswith({str(prefix)!r}), dnnl
        art = tessera.compile({models["cnn"]!r}, targets=["dnnl"])
        y = rt.Session(art).run({{"x": np.load({str(tmp_path / 'x.npy')!r})}})
        np.savez({str(tmp_path / 'y.npz')!r}, **y)
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TESSERA_PLUGIN_PATH")}
    env.update(PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    got = np.load(tmp_path / "y.npz")
    for name in ("feat", "logits"):
        np.testing.assert_array_equal(got[name], want[name])
