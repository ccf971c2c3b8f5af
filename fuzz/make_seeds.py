#!/usr/bin/env python3
"""Writes the fuzz targets' seed inputs into fuzz/corpus/<target>/.

    python3 fuzz/make_seeds.py BUILD_DIR     (e.g. build/dev)

Compiles two small models with the shipped plugins (the `tessera` CLI of
BUILD_DIR) and takes from the artifacts their plan sections and the saved
JSON runtime modules (json and dnnl); writes .npy files of several dtypes
and the shipped dnnl plugin's patterns. (No numpy: the .npy files
are written here, format 1.0.) The seeds are committed: run this
again only when a format changes. Inputs that once made a target fail are
added to the same directories by hand (named after what they caught).
"""
import os
import pathlib
import struct
import subprocess
import sys
import tempfile


HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent

MIXED = """module @seed
def @main(%x: f32[2, 4], %w: f32[3, 4]) -> f32[2, 3] {
  %d = dense(%x, %w)
  %r = relu(%d)
  %s = sin(%r)
  %t = sigmoid(%s)
  return %t
}
"""


def sections(data):
    """(kind, bytes) of each section of an artifact (runtime/artifact.h)."""
    assert data[:4] == b"TSRA", "not a Tessera artifact"
    (count,) = struct.unpack_from("<I", data, 16)
    out = []
    for i in range(count):
        kind, _, offset, size = struct.unpack_from("<IIQQ", data, 64 + 64 * i)
        out.append((kind, data[offset:offset + size]))
    return out


def npy(descr, fortran, shape, raw):
    """A .npy file, format 1.0: magic, header length, header dict, data."""
    dims = "".join(f"{d}, " for d in shape) if len(shape) == 1 else ", ".join(map(str, shape))
    header = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': ({dims}), }}"
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + raw


def write(target, name, data):
    d = HERE / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = pathlib.Path(sys.argv[1]).resolve()
    tessera = build / "core" / "tools" / "tessera"
    env = dict(os.environ, TESSERA_PLUGIN_PATH=str(build / "lib" / "tessera" / "plugins"))
    with tempfile.TemporaryDirectory() as tmp:
        mixed = pathlib.Path(tmp) / "mixed.tir"
        mixed.write_text(MIXED)
        models = [("cnn", ROOT / "examples" / "models" / "tiny_cnn.tir"), ("mixed", mixed)]
        for model_name, model in models:
            for target in ("json", "dnnl", "ccompiler"):
                if model_name == "mixed" and target != "json":
                    continue
                tsr = pathlib.Path(tmp) / f"{model_name}_{target}.tsr"
                subprocess.run([str(tessera), "compile", str(model), "-o", str(tsr),
                                "--target", target], check=True, env=env,
                               stdout=subprocess.DEVNULL)
                data = tsr.read_bytes()
                write("artifact", f"{model_name}_{target}.tsr", data)
                for kind, payload in sections(data):
                    if kind == 2:  # plan
                        write("plan", f"{model_name}_{target}.json", payload)
                    if kind == 5:  # external module: u64 key length, key, bytes
                        (n,) = struct.unpack_from("<Q", payload, 0)
                        key = payload[8:8 + n].decode()
                        if key in ("json", "dnnl"):
                            write("json_module", f"{model_name}_{key}.bin", payload[8 + n:])
    arrays = [  # name, descr, fortran order, shape, raw data
        ("f32_2x3", "<f4", False, (2, 3), struct.pack("<6f", 1, -2, 3.5, 0, 1e-3, -7)),
        ("f64_scalar", "<f8", False, (), struct.pack("<d", 1.5)),
        ("i64_4", "<i8", False, (4,), struct.pack("<4q", 0, 1, -2, 3)),
        ("u1_2x2x2", "|u1", False, (2, 2, 2), bytes(range(8))),
        ("bool_3", "|b1", False, (3,), bytes([1, 0, 1])),
        ("f2_fortran", "<f2", True, (2, 3), struct.pack("<6e", 1, 2, 3, 4, 5, 6)),
        ("i4_big_endian", ">i4", False, (3,), struct.pack(">3i", 1, 2, 3)),
        ("f4_empty", "<f4", False, (0, 3), b""),
    ]
    for name, descr, fortran, shape, raw in arrays:
        write("npy", f"{name}.npy", npy(descr, fortran, shape, raw))
    write("text_ir", "mixed.tir", MIXED.encode())
    write("passes", "mixed.tir", MIXED.encode())
    write("partition", "mixed.tir", MIXED.encode())
    write("compile", "mixed.tir", MIXED.encode())
    onnx = pathlib.Path("/usr/share/libonnx-testdata/data/simple/test_single_relu_model/model.onnx")
    write("onnx", "single_relu.onnx", onnx.read_bytes())
    act = "relu|leaky_relu|clip|sigmoid|tanh|hard_swish|hard_sigmoid|gelu"
    conv = act + "?(bias_add|add?(conv2d(*, const), const))"
    patterns = {
        "conv2d_bias_add_relu": "relu?(add(" + conv + ", *))",
        "conv2d_bn_act": act + "?(batch_norm(conv2d(*, const), const, const, const, const))",
        "dense_bias_act": act + "?(bias_add|add?(dense(*, const), const))",
        "matmul_bias_act": act + "?(add?(matmul(*, *), const))",
    }
    for name, text in patterns.items():
        write("pattern", name + ".pat", text.encode())


if __name__ == "__main__":
    main()
