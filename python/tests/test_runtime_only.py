"""tessera.runtime imports and runs an artifact with the compiler absent: the package
copied without the compiler extension, and no LLVM, protobuf or ONNX library loaded."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np

import tessera
import tessera.runtime as rt


def test_runtime_without_the_compiler(models, tmp_path):
    art = tessera.compile(models["affine"], targets=[])
    art.save(tmp_path / "affine.tsr")
    package = os.path.dirname(rt.__file__)
    only = tmp_path / "site" / "tessera"
    only.mkdir(parents=True)
    for name in os.listdir(package):
        if name.startswith("_compiler") or name == "compiler.py" or name == "__pycache__":
            continue
        shutil.copy2(os.path.join(package, name), only / name)
    assert not [n for n in os.listdir(only) if "compiler" in n]
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        import tessera.runtime as rt
        sess = rt.Session({str(tmp_path / 'affine.tsr')!r})
        x = np.array([[-1, 0, 1], [2, -3, 0.5]], np.float32)
        y = sess.run({{"x": x}})["y"]
        assert (y == np.maximum(x * 2 + 1, 0)).all(), y
        art = rt.load({str(tmp_path / 'affine.tsr')!r})
        assert [i.name for i in art.inputs] == ["x"]
        assert "tessera._compiler" not in sys.modules
        maps = open("/proc/self/maps").read()
        for lib in ("libLLVM", "libprotobuf", "libonnx"):
            assert lib not in maps, lib + " is loaded"
        try:
            import tessera
            tessera.compile
        except ImportError:
            print("compiler absent, as expected")
        else:
            raise SystemExit("tessera.compile was importable")
        print("runtime-only OK")
    """)
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"), PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "runtime-only OK" in r.stdout and "compiler absent" in r.stdout
