#!/usr/bin/env python3
"""Exports the benchmark zoo: real torchvision models (and a BERT-style
encoder written in plain torch) to ONNX, exactly as users export them.

Each model is built with random weights from a fixed seed (nothing is
downloaded: `weights=None`), put in eval mode and written with
  torch.onnx.export(model, x, DIR/NAME.onnx, opset_version=17,
                    input_names=[...], output_names=[...])
(no dynamic axes), together with a seeded input:
  DIR/NAME_inputs.npz          every input, named after the model's inputs
  DIR/NAME_<input name>.npy    each input on its own
Models already in DIR are skipped unless --force.

Random weights need care to be worth benchmarking and comparing: parameters
that torchvision initialises to a constant (zeros or ones: ViT's head is all
zeros, which makes every output 0; biases; LayerNorm) are re-randomised, and
every BatchNorm gets random affine parameters and statistics fitted, with
random perturbations, to the activations that reach it on a calibration input
(see randomise()), so that activations stay O(1) as in a trained network and
folding batch norm into the convolutions changes their weights. Each model's
output (from torch, on its input) is checked to be finite and not constant,
and printed with its spread.

Needs Debian's python3-torch 1.13 and python3-torchvision 0.14 (and
python3-onnx for --ops):
  /usr/bin/python3 bench/zoo/export.py --out DIR [--models resnet50,vit_b_16]
      [--force] [--ops] [--verbose]
"""
import argparse
import collections
import math
import os
import sys
import time
import warnings

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    import torchvision
except ImportError as e:
    sys.exit(f"export.py: {e}; run it with Debian's /usr/bin/python3 and "
             "`apt-get install python3-torch python3-torchvision`")

SEED = 0


class BertEncoder(torch.nn.Module):
    """A 4-layer BERT-base-style encoder written as Hugging Face writes it
    (BertEmbeddings, BertSelfAttention, ...): token ids -> word + position
    embeddings -> LayerNorm -> layers of self-attention and a GELU
    feed-forward, each followed by a residual add and LayerNorm."""

    def __init__(self, layers=4, hidden=768, heads=12, ffn=3072, vocab=30522, max_pos=512):
        super().__init__()
        self.heads, self.head_size = heads, hidden // heads
        self.word = torch.nn.Embedding(vocab, hidden)
        self.position = torch.nn.Embedding(max_pos, hidden)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0))
        self.norm = torch.nn.LayerNorm(hidden, eps=1e-12)
        self.layers = torch.nn.ModuleList(
            torch.nn.ModuleDict({
                "query": torch.nn.Linear(hidden, hidden),
                "key": torch.nn.Linear(hidden, hidden),
                "value": torch.nn.Linear(hidden, hidden),
                "attn_out": torch.nn.Linear(hidden, hidden),
                "attn_norm": torch.nn.LayerNorm(hidden, eps=1e-12),
                "ffn_in": torch.nn.Linear(hidden, ffn),
                "ffn_out": torch.nn.Linear(ffn, hidden),
                "ffn_norm": torch.nn.LayerNorm(hidden, eps=1e-12),
            }) for _ in range(layers))

    def split_heads(self, x):
        # As transformers' transpose_for_scores: the shape from x.size().
        x = x.view(x.size()[:-1] + (self.heads, self.head_size))
        return x.permute(0, 2, 1, 3)

    def forward(self, input_ids):
        seq = input_ids.size(1)
        x = self.word(input_ids) + self.position(self.position_ids[:, :seq])
        x = self.norm(x)
        for layer in self.layers:
            q = self.split_heads(layer["query"](x))
            k = self.split_heads(layer["key"](x))
            v = self.split_heads(layer["value"](x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
            context = torch.matmul(F.softmax(scores, dim=-1), v).permute(0, 2, 1, 3)
            context = context.contiguous().view(context.size()[:-2] + (-1,))
            x = layer["attn_norm"](layer["attn_out"](context) + x)
            h = layer["ffn_out"](F.gelu(layer["ffn_in"](x)))
            x = layer["ffn_norm"](h + x)
        return x


class SegmentationOut(torch.nn.Module):
    """torchvision's segmentation models return a dict; users export its 'out'."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class Lstm(torch.nn.Module):
    """A 2-layer LSTM over a sequence, returning the output and final states."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(256, 512, num_layers=2)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y, h, c


class Gru(torch.nn.Module):
    """A 2-layer GRU over a sequence (PyTorch exports linear_before_reset=1),
    returning the output and final state."""

    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(256, 512, num_layers=2)

    def forward(self, x):
        y, h = self.gru(x)
        return y, h


class Rnn(torch.nn.Module):
    """A 2-layer bidirectional tanh RNN over a sequence."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.RNN(256, 512, num_layers=2, bidirectional=True)

    def forward(self, x):
        y, h = self.rnn(x)
        return y, h


class Detections(torch.nn.Module):
    """torchvision's detection models take a list of images and return a
    list of dicts; users export one image and its boxes, scores and labels
    (post-processing included: per-class score threshold, top-k, NMS)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        out = self.model([x])[0]
        return out["boxes"], out["scores"], out["labels"]


def image(size=224):
    return {"x": ((1, 3, size, size), torch.float32)}


def classifier(name, **kw):
    return lambda: getattr(torchvision.models, name)(weights=None, **kw)


# name -> (builder, inputs {name: (shape, dtype)}, output names)
MODELS = {
    "resnet50": (classifier("resnet50"), image(), ["logits"]),
    "mobilenet_v2": (classifier("mobilenet_v2"), image(), ["logits"]),
    "mobilenet_v3_large": (classifier("mobilenet_v3_large"), image(), ["logits"]),
    "efficientnet_b0": (classifier("efficientnet_b0"), image(), ["logits"]),
    "densenet121": (classifier("densenet121"), image(), ["logits"]),
    "inception_v3": (classifier("inception_v3", aux_logits=False, init_weights=True),
                     image(299), ["logits"]),
    "googlenet": (classifier("googlenet", aux_logits=False, init_weights=True), image(),
                  ["logits"]),
    "squeezenet1_1": (classifier("squeezenet1_1"), image(), ["logits"]),
    "shufflenet_v2_x1_0": (classifier("shufflenet_v2_x1_0"), image(), ["logits"]),
    "regnet_y_400mf": (classifier("regnet_y_400mf"), image(), ["logits"]),
    "convnext_tiny": (classifier("convnext_tiny"), image(), ["logits"]),
    "vit_b_16": (classifier("vit_b_16"), image(), ["logits"]),
    "deeplabv3_mobilenet_v3_large": (
        lambda: SegmentationOut(torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, aux_loss=False)),
        image(), ["out"]),
    "ssdlite320_mobilenet_v3_large": (
        lambda: Detections(torchvision.models.detection.ssdlite320_mobilenet_v3_large(
            weights=None, weights_backbone=None)),
        {"x": ((3, 320, 320), torch.float32)}, ["boxes", "scores", "labels"]),
    "bert_encoder": (BertEncoder, {"input_ids": ((1, 128), torch.int64)},
                     ["last_hidden_state"]),
    "lstm": (Lstm, {"x": ((100, 1, 256), torch.float32)}, ["y", "h_n", "c_n"]),
    "gru": (Gru, {"x": ((100, 1, 256), torch.float32)}, ["y", "h_n"]),
    "rnn": (Rnn, {"x": ((100, 1, 256), torch.float32)}, ["y", "h_n"]),
}


@torch.no_grad()
def randomise(model, gen, example):
    """Re-randomises, in place and deterministically (`gen`): every BatchNorm
    gets affine parameters weight U(0.5, 1.5), bias N(0, 0.1) and statistics
    fitted to what reaches it when the model runs on `example` (a calibration
    input): running mean = mean + N(0, 0.1) * std and running variance =
    variance * U(0.5, 1.5) per channel, so that activations stay O(1) however
    the convolutions were initialised (inception_v3's std 0.1 weights would
    give logits of 1e14), as in a trained network. LayerNorm and GroupNorm get
    weight U(0.8, 1.2), bias N(0, 0.05); every other parameter that is
    constant (zeros: biases, ViT's head and class token) is drawn at random."""
    def normal(shape, std):
        return torch.randn(shape, generator=gen) * std

    def uniform(shape, lo, hi):
        return lo + (hi - lo) * torch.rand(shape, generator=gen)

    def fit_statistics(m, inp):
        x = inp[0]
        dims = [d for d in range(x.dim()) if d != 1]
        mean, var = x.mean(dims), x.var(dims, unbiased=False).clamp(min=1e-4)
        m.running_mean.copy_(mean + normal(mean.shape, 0.1) * var.sqrt())
        m.running_var.copy_(var * uniform(var.shape, 0.5, 1.5))

    done, hooks = set(), []
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.weight.copy_(uniform(m.weight.shape, 0.5, 1.5))
            m.bias.copy_(normal(m.bias.shape, 0.1))
            hooks.append(m.register_forward_pre_hook(fit_statistics))
            done.update({id(m.weight), id(m.bias)})
        elif isinstance(m, (torch.nn.LayerNorm, torch.nn.GroupNorm)):
            m.weight.copy_(uniform(m.weight.shape, 0.8, 1.2))
            m.bias.copy_(normal(m.bias.shape, 0.05))
            done.update({id(m.weight), id(m.bias)})
    for p in model.parameters():
        if id(p) in done or p.numel() < 2 or not bool((p == p.flatten()[0]).all()):
            continue
        if p.dim() >= 2:  # a zero-initialised weight: as nn.Linear's default init
            p.copy_(normal(p.shape, 1 / math.sqrt(3 * p[0].numel())))
        else:  # biases and other vectors
            p.copy_(normal(p.shape, 0.02))
    if hooks:  # BatchNorm pre-hooks run in execution order, each seeing fitted inputs
        model(*example)
        for h in hooks:
            h.remove()


def make_inputs(spec, gen):
    """Seeded inputs: images N(0, 1) (as normalised pictures), token ids
    uniform over the vocabulary."""
    inputs = {}
    for name, (shape, dtype) in spec.items():
        if dtype == torch.int64:
            inputs[name] = torch.randint(0, 30522, shape, generator=gen, dtype=torch.int64)
        else:
            inputs[name] = torch.randn(shape, generator=gen, dtype=dtype)
    return inputs


def op_histogram(path):
    """ONNX op type -> count, over the graph and its subgraphs."""
    import onnx
    counts = collections.Counter()

    def walk(graph):
        for node in graph.node:
            counts[node.op_type] += 1
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g)
                for g in attr.graphs:
                    walk(g)
    walk(onnx.load(path, load_external_data=False).graph)
    return counts


def export(name, out_dir):
    """Builds, checks and writes one model and its inputs; returns a summary."""
    build, spec, output_names = MODELS[name]
    torch.manual_seed(SEED)
    model = build().eval()
    randomise(model, torch.Generator().manual_seed(SEED),
              tuple(make_inputs(spec, torch.Generator().manual_seed(SEED + 2)).values()))
    inputs = make_inputs(spec, torch.Generator().manual_seed(SEED + 1))
    args = tuple(inputs.values())
    with torch.no_grad():
        outputs = model(*args)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    stats = []
    for out_name, y in zip(output_names, outputs):
        if not bool(torch.isfinite(y).all()):
            raise RuntimeError(f"{name}: output '{out_name}' is not finite")
        if float(y.max() - y.min()) <= 1e-6 * max(1.0, float(y.abs().max())):
            raise RuntimeError(f"{name}: output '{out_name}' is constant ({float(y.flatten()[0])})")
        stats.append(f"{out_name} {list(y.shape)} in [{float(y.min()):.3g}, "
                     f"{float(y.max()):.3g}] std {float(y.double().std()):.3g}")

    onnx_path = os.path.join(out_dir, name + ".onnx")
    tmp = onnx_path + ".tmp"
    torch.onnx.export(model, args, tmp, opset_version=17, input_names=list(spec),
                      output_names=output_names)
    arrays = {k: v.numpy() for k, v in inputs.items()}
    for k, v in arrays.items():
        np.save(os.path.join(out_dir, f"{name}_{k}.npy"), v)
    np.savez(os.path.join(out_dir, f"{name}_inputs.npz"), **arrays)
    os.replace(tmp, onnx_path)  # last: its presence means the export is complete
    return "; ".join(stats)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for NAME.onnx and NAME_inputs.npz")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated models (default: all): " + ", ".join(MODELS))
    ap.add_argument("--force", action="store_true", help="re-export models already in --out")
    ap.add_argument("--verbose", action="store_true",
                    help="print the warnings of torch.onnx.export (counted otherwise)")
    ap.add_argument("--ops", action="store_true",
                    help="print each model's ONNX op histogram (needs onnx)")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        sys.exit(f"export.py: unknown models {', '.join(unknown)}; known: {', '.join(MODELS)}")
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    for name in models:
        onnx_path = os.path.join(args.out, name + ".onnx")
        if os.path.exists(onnx_path) and not args.force:
            print(f"{name}: already exported ({onnx_path})", flush=True)
        else:
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                summary = export(name, args.out)
            print(f"{name}: exported in {time.perf_counter() - start:.1f} s: {summary}"
                  + (f" ({len(caught)} exporter warning{'s' * (len(caught) > 1)})"
                     if caught and not args.verbose else ""),
                  flush=True)
            if args.verbose:
                for w in caught:
                    print(f"  warning: {w.category.__name__}: {w.message}", flush=True)
        if args.ops:
            ops = op_histogram(onnx_path)
            print("  ops: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())), flush=True)


if __name__ == "__main__":
    main()
