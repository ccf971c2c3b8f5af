#!/usr/bin/env python3
"""Benchmark models: ResNet-18 and MobileNetV3-Small as ONNX files.

Builds with onnx.helper (python3-onnx, opset 17) two image classifiers with
the layer shapes of the published networks and random weights from a fixed
seed, plus a seeded input for each:

  resnet18     conv7x7/2 64 + BatchNormalization + Relu, MaxPool 3x3/2, four
               stages of two BasicBlocks (64, 128, 256, 512 channels; the
               first block of stages 2-4 has stride 2 and a 1x1/2
               projection shortcut with its BatchNormalization), residual
               Add + Relu, GlobalAveragePool, Flatten, Gemm 1000. Convs have
               no bias; every BatchNormalization node is kept (not folded),
               so importers see them.
  mobilenetv3  MobileNetV3-Small (Howard et al. 2019, table 2): conv3x3/2 16
               + HardSwish; 11 inverted-residual blocks (expansion 1x1 conv,
               depthwise 3x3/5x5 conv with group = channels, optional
               squeeze-excite GlobalAveragePool -> 1x1 conv -> Relu -> 1x1
               conv -> HardSigmoid(1/6, 1/2) -> Mul, projection 1x1 conv,
               residual Add when the shapes match; Relu or HardSwish as in
               the table); 1x1 conv 576 + HardSwish, GlobalAveragePool,
               Flatten, Gemm 1024 + HardSwish, Gemm 1000 (as torchvision).
               Convs carry biases: BatchNormalization folded into them, as
               torch.onnx exports an eval-mode model.

Weights keep activations O(1) so that comparisons are meaningful. ResNet:
He initialisation (std sqrt(2 / fan_in)), BatchNormalization statistics
near (0, 1) with gamma ~ 1, the last one of each residual branch and of each
shortcut at gamma ~ 0.5 so the residual sums do not grow with depth.
MobileNet (no batch norm to rescale): each conv's std is sqrt(1 / (fan_in m))
for its input's second moment m, tracked layer by layer. Gemm: std
sqrt(1 / (fan_in m)). (At 224: ResNet logits rms ~1.6, MobileNet ~0.5.) The input is N(0, 1) (a
normalised image). Weights are graph initializers, as exporters write them.

Writes DIR/<model>.onnx and DIR/<model>_input.npy (1x3xHxW float32, the
graph input "x"; the output is "logits", 1x1000). With --weights-npz, also
DIR/<model>_weights.npz: every initializer, keyed by its name (what the
hand-written oneDNN program bench/dnnl_native reads).

With --run TESSERA, each model is then compiled (host only, and for each
plugin of --targets) and run with `tessera run --repeat N --print-time`;
the compile time and latency line are printed (what `./dev.sh bench` does).

Usage: make_models.py --out DIR [--size 224] [--width 1.0]
                      [--models resnet18,mobilenetv3] [--seed 0] [--weights-npz]
                      [--run TESSERA [--targets json] [--repeat 10]]
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
CLASSES = 1000


class Builder:
    """Nodes, initializers and unique names of one graph under construction."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.count = {}

    def name(self, base):
        n = self.count.get(base, 0)
        self.count[base] = n + 1
        return f"{base}{n}"

    def weight(self, base, array):
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def node(self, op, inputs, base, out=None, **attrs):
        out = out or self.name(base)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out + "_" + op, **attrs))
        return out

    # Layers ------------------------------------------------------------------
    def conv(self, x, cin, cout, k, stride=1, group=1, bias=False, gain=2.0):
        """Conv with He-initialised weights (pads k // 2, as both networks)."""
        fan_in = cin // group * k * k
        w = self.rng.standard_normal((cout, cin // group, k, k)) * np.sqrt(gain / fan_in)
        inputs = [x, self.weight("w", w)]
        if bias:
            inputs.append(self.weight("b", self.rng.standard_normal(cout) * 0.05))
        p = k // 2
        return self.node("Conv", inputs, "conv", kernel_shape=[k, k], strides=[stride, stride],
                         pads=[p, p, p, p], group=group)

    def bn(self, x, c, gamma=1.0):
        """BatchNormalization with statistics near (0, 1) and gamma ~ `gamma`."""
        r = self.rng
        scale = self.weight("gamma", gamma * r.uniform(0.8, 1.2, c))
        shift = self.weight("beta", r.standard_normal(c) * 0.05)
        mean = self.weight("mean", r.standard_normal(c) * 0.1)
        var = self.weight("var", r.uniform(0.8, 1.2, c))
        return self.node("BatchNormalization", [x, scale, shift, mean, var], "bn", epsilon=1e-5)

    def act(self, x, kind):
        if kind == "relu":
            return self.node("Relu", [x], "relu")
        if kind == "hswish":
            return self.node("HardSwish", [x], "hswish")
        raise ValueError(kind)

    def gemm(self, x, cin, cout, out=None, moment=1.0):
        """Gemm whose output has variance ~1 for inputs of second moment `moment`."""
        w = self.rng.standard_normal((cout, cin)) * np.sqrt(1.0 / (cin * moment))
        b = self.rng.standard_normal(cout) * 0.05
        return self.node("Gemm", [x, self.weight("fc_w", w), self.weight("fc_b", b)], "fc",
                         out=out, transB=1)

    def head(self, x):
        gap = self.node("GlobalAveragePool", [x], "gap")
        return self.node("Flatten", [gap], "flatten", axis=1)

    def model(self, name, size, out="logits"):
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, CLASSES])],
            initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="tessera-bench")
        onnx.checker.check_model(model)
        return model


def channels(c, width):
    """`c` scaled by `width`, rounded to a multiple of 8 (at least 8)."""
    return max(8, int(c * width + 4) // 8 * 8)


def resnet18(size, width, seed):
    b = Builder(seed)
    c = channels(64, width)
    x = b.act(b.bn(b.conv("x", 3, c, 7, stride=2), c), "relu")
    x = b.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    cin = c
    for stage, base in enumerate([64, 128, 256, 512]):
        cout = channels(base, width)
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            y = b.act(b.bn(b.conv(x, cin, cout, 3, stride=stride), cout), "relu")
            y = b.bn(b.conv(y, cout, cout, 3), cout, gamma=0.5)
            shortcut = x
            if stride != 1 or cin != cout:
                shortcut = b.bn(b.conv(x, cin, cout, 1, stride=stride), cout, gamma=0.5)
            x = b.act(b.node("Add", [y, shortcut], "add"), "relu")
            cin = cout
    b.gemm(b.head(x), cin, CLASSES, out="logits")
    return b.model("resnet18", size)


# MobileNetV3-Small's blocks: kernel, expansion, output, squeeze-excite,
# activation, stride (Howard et al. 2019, table 2).
MOBILENETV3_SMALL = [
    (3, 16, 16, True, "relu", 2),
    (3, 72, 24, False, "relu", 2),
    (3, 88, 24, False, "relu", 1),
    (5, 96, 40, True, "hswish", 2),
    (5, 240, 40, True, "hswish", 1),
    (5, 240, 40, True, "hswish", 1),
    (5, 120, 48, True, "hswish", 1),
    (5, 144, 48, True, "hswish", 1),
    (5, 288, 96, True, "hswish", 2),
    (5, 576, 96, True, "hswish", 1),
    (5, 576, 96, True, "hswish", 1),
]


# Second moment and mean of relu / hard_swish of an N(0, 1) pre-activation.
ACT_MOMENT = {"relu": 0.5, "hswish": 1.0 / 3}
ACT_MEAN = {"relu": 0.4, "hswish": 1.0 / 6}


def squeeze_excite(b, x, c, act):
    """x * hard_sigmoid(conv(relu(conv(avg(x))))); the gate is ~0.5 +- 0.17."""
    s = channels(c / 4, 1.0)
    g = b.node("GlobalAveragePool", [x], "se_gap")
    g = b.act(b.conv(g, c, s, 1, bias=True, gain=1.0 / ACT_MEAN[act] ** 2), "relu")
    g = b.conv(g, s, c, 1, bias=True)
    g = b.node("HardSigmoid", [g], "hsigmoid", alpha=1.0 / 6, beta=0.5)
    return b.node("Mul", [x, g], "se_mul")


def taps(size, k, stride):
    """The fraction of a k x k window (padding k // 2) inside a size x size
    input, averaged over the output positions."""
    rows = [sum(0 <= o * stride - k // 2 + i < size for i in range(k))
            for o in range((size - 1) // stride + 1)]
    return (sum(rows) / (len(rows) * k)) ** 2


def mobilenetv3(size, width, seed):
    """Without batch norm to rescale, each conv's gain is 1 / (its input's
    second moment m), tracked along the way, for N(0, 1) pre-activations;
    windows that overlap the zero padding (7x7 maps, 5x5 kernels) are
    compensated as well."""
    b = Builder(seed)
    c = channels(16, width)
    x = b.act(b.conv("x", 3, c, 3, stride=2, bias=True, gain=1.0 / taps(size, 3, 2)), "hswish")
    m = ACT_MOMENT["hswish"]
    hw = (size - 1) // 2 + 1  # the current feature map's height and width
    for k, exp, out, se, act, stride in MOBILENETV3_SMALL:
        e, o = channels(exp, width), channels(out, width)
        y, my = x, m
        if e != c:
            y = b.act(b.conv(y, c, e, 1, bias=True, gain=1.0 / my), act)
            my = ACT_MOMENT[act]
        gain = 1.0 / (my * taps(hw, k, stride))
        y = b.act(b.conv(y, e, e, k, stride=stride, group=e, bias=True, gain=gain), act)
        hw = (hw - 1) // stride + 1
        my = ACT_MOMENT[act]
        if se:
            y = squeeze_excite(b, y, e, act)
            my *= 0.25 + 1.0 / 36
        # The projection is linear; a residual branch adds half the input's
        # moment, so the sums grow slowly (1, 1.5, 2, ...).
        residual = stride == 1 and c == o
        y = b.conv(y, e, o, 1, bias=True, gain=(0.5 if residual else 1.0) / my)
        x, m = (b.node("Add", [x, y], "add"), 1.5 * m) if residual else (y, 1.0)
        c = o
    last = channels(576, width)
    x = b.act(b.conv(x, c, last, 1, bias=True, gain=1.0 / m), "hswish")
    x = b.act(b.gemm(b.head(x), last, 1024, moment=ACT_MEAN["hswish"] ** 2), "hswish")
    b.gemm(x, 1024, CLASSES, out="logits", moment=ACT_MOMENT["hswish"])
    return b.model("mobilenetv3", size)


MODELS = {"resnet18": resnet18, "mobilenetv3": mobilenetv3}


def compile_and_run(tessera, out, name, targets, repeat):
    """`tessera compile` (host only, then each target) and `tessera run
    --print-time` on the model's input; prints compile time and latency."""
    for target in [""] + targets:
        label = target or "host"
        tsr = os.path.join(out, f"{name}_{label}.tsr")
        start = time.perf_counter()
        subprocess.run([tessera, "compile", os.path.join(out, name + ".onnx"), "-o", tsr] +
                       (["--target", target] if target else []),
                       check=True, stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        run = subprocess.run([tessera, "run", tsr, "--repeat", str(repeat), "--print-time",
                              "--inputs", "x=" + os.path.join(out, name + "_input.npy")],
                             check=True, capture_output=True, text=True)
        latency = run.stdout.strip().splitlines()[-1]
        print(f"  {name} {label}: compile {seconds:.2f} s; {latency}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the .onnx and .npy files")
    ap.add_argument("--size", type=int, default=224, help="input height and width")
    ap.add_argument("--width", type=float, default=1.0,
                    help="channel multiplier (0.5: half the channels)")
    ap.add_argument("--models", default="resnet18,mobilenetv3")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--weights-npz", action="store_true",
                    help="also write DIR/<model>_weights.npz (initializers by name)")
    ap.add_argument("--run", metavar="TESSERA",
                    help="then compile each model with this tessera binary and time it")
    ap.add_argument("--targets", default="", help="with --run: plugins to compile for as well")
    ap.add_argument("--repeat", type=int, default=10, help="with --run: timed runs")
    args = ap.parse_args()
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown or not names:
        sys.exit(f"make_models.py: unknown model '{','.join(unknown)}' "
                 f"(known: {','.join(MODELS)})")
    if args.size < 32 or args.width <= 0:
        sys.exit("make_models.py: --size must be at least 32 and --width positive")
    os.makedirs(args.out, exist_ok=True)
    for name in names:
        i = list(MODELS).index(name)  # seeds independent of --models' order
        model = MODELS[name](args.size, args.width, args.seed + i)
        onnx.save(model, os.path.join(args.out, name + ".onnx"))
        x = np.random.default_rng(args.seed + 100 + i).standard_normal(
            (1, 3, args.size, args.size)).astype(np.float32)
        np.save(os.path.join(args.out, name + "_input.npy"), x)
        if args.weights_npz:
            np.savez(os.path.join(args.out, name + "_weights.npz"),
                     **{t.name: numpy_helper.to_array(t) for t in model.graph.initializer})
        params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
        print(f"{name}: {len(model.graph.node)} nodes, {params / 1e6:.2f} M parameters, "
              f"input 1x3x{args.size}x{args.size}")
        if args.run:
            compile_and_run(args.run, args.out, name, [t for t in args.targets.split(",") if t],
                            args.repeat)


if __name__ == "__main__":
    main()
