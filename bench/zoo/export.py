#!/usr/bin/env python3
"""Exports the benchmark zoo: real torchvision models (and models written
in plain torch as their reference code writes them: BERT, GPT-2 and wav2vec2
style transformers, U-Net, DBNet, YOLOv5s, RNNs) to ONNX, exactly as users
export them.

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

    def __init__(self, model, masks=False):
        super().__init__()
        self.model = model
        self.masks = masks

    def forward(self, x):
        out = self.model([x])[0]
        if self.masks:
            return out["boxes"], out["scores"], out["labels"], out["masks"]
        return out["boxes"], out["scores"], out["labels"]


def conv_bn_relu(c_in, c_out, k=3):
    return [torch.nn.Conv2d(c_in, c_out, k, padding=k // 2, bias=False),
            torch.nn.BatchNorm2d(c_out), torch.nn.ReLU(inplace=True)]


class UNet(torch.nn.Module):
    """A U-Net for binary masks (the shape of the usual segmentation
    tutorials): 4 encoder levels of two 3x3 conv + BatchNorm + ReLU (16, 32,
    64, 128 channels) each followed by a 2x2 max pool, a 256-channel
    bottleneck, and a decoder that upsamples with ConvTranspose2d(k2, s2),
    concatenates the skip and applies two 3x3 convs; a last
    ConvTranspose2d(16 -> 1, k2, s2) gives a one-channel mask at twice the
    input resolution (a super-resolved mask), then a sigmoid. The decoder's
    ConvTranspose2d layers have no batch norm after them to fold into, and the
    last one has a single output channel."""

    def __init__(self, widths=(16, 32, 64, 128), bottleneck=256):
        super().__init__()
        double = lambda c_in, c_out: torch.nn.Sequential(*conv_bn_relu(c_in, c_out),
                                                         *conv_bn_relu(c_out, c_out))
        chans = (3,) + widths
        self.down = torch.nn.ModuleList(double(a, b) for a, b in zip(chans, widths))
        self.bottom = double(widths[-1], bottleneck)
        ups = (bottleneck,) + widths[::-1]
        self.up = torch.nn.ModuleList(torch.nn.ConvTranspose2d(a, b, 2, stride=2)
                                      for a, b in zip(ups, ups[1:]))
        self.dec = torch.nn.ModuleList(double(2 * b, b) for b in ups[1:])
        self.final = torch.nn.ConvTranspose2d(widths[0], 1, 2, stride=2)

    def forward(self, x):
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottom(x)
        for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
            x = dec(torch.cat([up(x), skip], dim=1))
        return torch.sigmoid(self.final(x))


class DBNet(torch.nn.Module):
    """A DBNet text detector (Liao et al., as in its reference code and
    MMOCR): torchvision's ResNet-18 trunk (1/4 to 1/32), an FPN whose 1x1
    laterals are summed top-down with nearest 2x upsampling, each level
    reduced to 64 channels by a 3x3 conv, upsampled (nearest, 8x/4x/2x) to 1/4
    and concatenated, then the probability head: 3x3 conv + BN + ReLU, two
    ConvTranspose2d(k2, s2) back to full resolution (the first followed by BN
    + ReLU, the second down to one channel) and a sigmoid."""

    def __init__(self, inner=256):
        super().__init__()
        r = torchvision.models.resnet18(weights=None)
        self.stem = torch.nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool)
        self.stages = torch.nn.ModuleList([r.layer1, r.layer2, r.layer3, r.layer4])
        self.lateral = torch.nn.ModuleList(torch.nn.Conv2d(c, inner, 1, bias=False)
                                           for c in (64, 128, 256, 512))
        self.smooth = torch.nn.ModuleList(
            torch.nn.Conv2d(inner, inner // 4, 3, padding=1, bias=False) for _ in range(4))
        q = inner // 4
        self.head = torch.nn.Sequential(
            *conv_bn_relu(inner, q), torch.nn.ConvTranspose2d(q, q, 2, stride=2),
            torch.nn.BatchNorm2d(q), torch.nn.ReLU(inplace=True),
            torch.nn.ConvTranspose2d(q, 1, 2, stride=2), torch.nn.Sigmoid())

    def forward(self, x):
        x = self.stem(x)
        feats = []
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        lat = [conv(f) for conv, f in zip(self.lateral, feats)]
        for i in (2, 1, 0):  # top-down: in4 + up(in5), ...
            lat[i] = lat[i] + F.interpolate(lat[i + 1], scale_factor=2, mode="nearest")
        fused = [smooth(p) for smooth, p in zip(self.smooth, lat)]
        fused = [fused[0]] + [F.interpolate(p, scale_factor=2 ** i, mode="nearest")
                              for i, p in enumerate(fused[1:], 1)]
        return self.head(torch.cat(fused[::-1], dim=1))


class Wav2Vec2Frontend(torch.nn.Module):
    """A wav2vec2-base-style audio encoder written as Hugging Face writes it
    (Wav2Vec2FeatureEncoder, FeatureProjection, Wav2Vec2Attention ...): raw
    16 kHz audio -> 7 bias-free Conv1d of 512 channels (kernels 10,3,3,3,3,2,2,
    strides 5,2,2,2,2,2,2: 320x down, 16000 samples -> 49 frames), a
    GroupNorm(512, 512) after the first only (exported as
    InstanceNormalization), GELU after each -> [1, T, 512] -> LayerNorm ->
    Linear 512->768 -> LayerNorm -> 2 post-norm encoder layers (12 heads,
    FFN 3072, GELU) whose attention scales q, folds the heads into the batch
    and uses bmm, as Wav2Vec2Attention does. Without the positional conv
    embedding. Convs are initialised as Hugging Face does (Kaiming normal) so
    that no normalisation is needed between them."""

    def __init__(self, layers=2, hidden=768, heads=12, ffn=3072, conv_dim=512):
        super().__init__()
        self.heads, self.head_size = heads, hidden // heads
        specs = [(10, 5)] + [(3, 2)] * 4 + [(2, 2)] * 2
        self.convs = torch.nn.ModuleList(
            torch.nn.Conv1d(1 if i == 0 else conv_dim, conv_dim, k, stride=s, bias=False)
            for i, (k, s) in enumerate(specs))
        for conv in self.convs:
            torch.nn.init.kaiming_normal_(conv.weight)
        self.group_norm = torch.nn.GroupNorm(conv_dim, conv_dim)
        self.feature_norm = torch.nn.LayerNorm(conv_dim)
        self.projection = torch.nn.Linear(conv_dim, hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.layers = torch.nn.ModuleList(
            torch.nn.ModuleDict({
                "q_proj": torch.nn.Linear(hidden, hidden),
                "k_proj": torch.nn.Linear(hidden, hidden),
                "v_proj": torch.nn.Linear(hidden, hidden),
                "out_proj": torch.nn.Linear(hidden, hidden),
                "layer_norm": torch.nn.LayerNorm(hidden),
                "intermediate_dense": torch.nn.Linear(hidden, ffn),
                "output_dense": torch.nn.Linear(ffn, hidden),
                "final_layer_norm": torch.nn.LayerNorm(hidden),
            }) for _ in range(layers))

    def attention(self, layer, x):
        bsz, tgt, _ = x.size()
        shape = lambda t: t.view(bsz, -1, self.heads, self.head_size).transpose(1, 2).contiguous()
        proj = (bsz * self.heads, -1, self.head_size)
        q = shape(layer["q_proj"](x) * self.head_size ** -0.5).view(*proj)
        k = shape(layer["k_proj"](x)).view(*proj)
        v = shape(layer["v_proj"](x)).view(*proj)
        weights = F.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1)
        out = torch.bmm(weights, v).view(bsz, self.heads, tgt, self.head_size)
        out = out.transpose(1, 2).reshape(bsz, tgt, self.heads * self.head_size)
        return layer["out_proj"](out)

    def forward(self, audio):
        x = audio[:, None]
        for i, conv in enumerate(self.convs):
            x = conv(x)
            x = F.gelu(self.group_norm(x) if i == 0 else x)
        x = self.projection(self.feature_norm(x.transpose(1, 2)))
        x = self.norm(x)
        for layer in self.layers:
            x = layer["layer_norm"](x + self.attention(layer, x))
            x = x + layer["output_dense"](F.gelu(layer["intermediate_dense"](x)))
            x = layer["final_layer_norm"](x)
        return x


class YoloConv(torch.nn.Module):
    """YOLOv5's Conv: Conv2d (same padding, no bias) + BatchNorm + SiLU."""

    def __init__(self, c_in, c_out, k=1, s=1, p=None):
        super().__init__()
        self.conv = torch.nn.Conv2d(c_in, c_out, k, s, k // 2 if p is None else p, bias=False)
        self.bn = torch.nn.BatchNorm2d(c_out, eps=1e-3, momentum=0.03)
        self.act = torch.nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class C3(torch.nn.Module):
    """YOLOv5's C3: two 1x1 branches of half width, n bottlenecks (1x1, 3x3,
    residual add if `shortcut`) on one, concatenated and fused by a 1x1."""

    def __init__(self, c_in, c_out, n=1, shortcut=True):
        super().__init__()
        c = c_out // 2
        self.cv1, self.cv2 = YoloConv(c_in, c), YoloConv(c_in, c)
        self.cv3 = YoloConv(2 * c, c_out)
        self.m = torch.nn.ModuleList(torch.nn.ModuleList([YoloConv(c, c), YoloConv(c, c, 3)])
                                     for _ in range(n))
        self.shortcut = shortcut

    def forward(self, x):
        y = self.cv1(x)
        for cv1, cv2 in self.m:
            y = y + cv2(cv1(y)) if self.shortcut else cv2(cv1(y))
        return self.cv3(torch.cat([y, self.cv2(x)], dim=1))


class YoloV5sBody(torch.nn.Module):
    """YOLOv5s (v6 architecture: width 0.50, depth 0.33) without the Detect
    layer's decoding: a 6x6 stride-2 stem, strided Conv + C3 stages (32 to
    512 channels; 1, 2, 3, 1 bottlenecks), SPPF (three chained 5x5 stride-1
    max pools concatenated), a PANet neck (nn.Upsample nearest 2x + Concat
    top-down, strided Conv + Concat bottom-up, C3 without shortcuts) and the
    three 1x1 detection convs, 3 anchors x 85 = 255 channels at strides 8, 16
    and 32, returned raw as users export them for their own
    post-processing."""

    def __init__(self, outputs=255):
        super().__init__()
        self.b0 = torch.nn.Sequential(YoloConv(3, 32, 6, 2, 2), YoloConv(32, 64, 3, 2),
                                      C3(64, 64, 1), YoloConv(64, 128, 3, 2), C3(128, 128, 2))
        self.b1 = torch.nn.Sequential(YoloConv(128, 256, 3, 2), C3(256, 256, 3))
        self.b2 = torch.nn.Sequential(YoloConv(256, 512, 3, 2), C3(512, 512, 1))
        self.sppf_cv1, self.sppf_cv2 = YoloConv(512, 256), YoloConv(1024, 512)
        self.pool = torch.nn.MaxPool2d(5, 1, 2)
        self.up = torch.nn.Upsample(scale_factor=2, mode="nearest")
        self.h10, self.h13 = YoloConv(512, 256), C3(512, 256, 1, False)
        self.h14, self.h17 = YoloConv(256, 128), C3(256, 128, 1, False)
        self.h18, self.h20 = YoloConv(128, 128, 3, 2), C3(256, 256, 1, False)
        self.h21, self.h23 = YoloConv(256, 256, 3, 2), C3(512, 512, 1, False)
        self.detect = torch.nn.ModuleList(torch.nn.Conv2d(c, outputs, 1) for c in (128, 256, 512))

    def forward(self, x):
        c3 = self.b0(x)
        c4 = self.b1(c3)
        y = self.sppf_cv1(self.b2(c4))
        y1 = self.pool(y)
        y2 = self.pool(y1)
        c5 = self.sppf_cv2(torch.cat([y, y1, y2, self.pool(y2)], dim=1))
        t5 = self.h10(c5)
        t4 = self.h14(self.h13(torch.cat([self.up(t5), c4], dim=1)))
        p3 = self.h17(torch.cat([self.up(t4), c3], dim=1))
        p4 = self.h20(torch.cat([self.h18(p3), t4], dim=1))
        p5 = self.h23(torch.cat([self.h21(p4), t5], dim=1))
        return tuple(head(p) for head, p in zip(self.detect, (p3, p4, p5)))


class GptDecoder(torch.nn.Module):
    """A 4-layer GPT-2-small-style decoder written as Hugging Face writes it
    (GPT2Model, GPT2Attention ...): token + position embeddings (vocab 50257,
    128 positions, hidden 768, initialised N(0, 0.02) as GPT-2), pre-norm
    blocks whose attention projects q, k, v with one Linear and splits it,
    masks with the causal `torch.tril` buffer by `torch.where(mask, scores,
    finfo.min)`, and a tanh-approximated GELU feed-forward (GPT-2's gelu_new),
    a final LayerNorm and an LM head tied to the token embedding: logits
    f32[1, 128, 50257]."""

    def __init__(self, layers=4, hidden=768, heads=12, vocab=50257, n_ctx=128):
        super().__init__()
        self.heads, self.head_size = heads, hidden // heads
        self.wte = torch.nn.Embedding(vocab, hidden)
        self.wpe = torch.nn.Embedding(n_ctx, hidden)
        for emb in (self.wte, self.wpe):
            torch.nn.init.normal_(emb.weight, std=0.02)
        self.register_buffer("bias", torch.tril(torch.ones(n_ctx, n_ctx, dtype=torch.bool))
                             .view(1, 1, n_ctx, n_ctx))
        self.layers = torch.nn.ModuleList(
            torch.nn.ModuleDict({
                "ln_1": torch.nn.LayerNorm(hidden),
                "c_attn": torch.nn.Linear(hidden, 3 * hidden),
                "c_proj": torch.nn.Linear(hidden, hidden),
                "ln_2": torch.nn.LayerNorm(hidden),
                "c_fc": torch.nn.Linear(hidden, 4 * hidden),
                "mlp_proj": torch.nn.Linear(4 * hidden, hidden),
            }) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(hidden)
        self.lm_head = torch.nn.Linear(hidden, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def split_heads(self, x):
        return x.view(x.size()[:-1] + (self.heads, self.head_size)).permute(0, 2, 1, 3)

    def forward(self, input_ids):
        seq = input_ids.size(-1)
        positions = torch.arange(0, seq, dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        for layer in self.layers:
            q, k, v = layer["c_attn"](layer["ln_1"](x)).split(x.size(-1), dim=2)
            q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
            scores = torch.matmul(q, k.transpose(-1, -2)) / (v.size(-1) ** 0.5)
            mask = self.bias[:, :, :seq, :seq]
            scores = torch.where(mask, scores, torch.tensor(torch.finfo(scores.dtype).min))
            a = torch.matmul(F.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).contiguous()
            x = x + layer["c_proj"](a.view(a.size()[:-2] + (-1,)))
            h = F.gelu(layer["c_fc"](layer["ln_2"](x)), approximate="tanh")
            x = x + layer["mlp_proj"](h)
        return self.lm_head(self.ln_f(x))


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
    "unet": (UNet, image(256), ["mask"]),
    "dbnet": (DBNet, image(640), ["prob"]),
    "wav2vec2_frontend": (Wav2Vec2Frontend, {"audio": ((1, 16000), torch.float32)},
                          ["hidden"]),
    "yolov5s_body": (YoloV5sBody, image(640), ["p3", "p4", "p5"]),
    "gpt_decoder": (GptDecoder, {"input_ids": ((1, 128), torch.int64)}, ["logits"]),
    "r3d_18": (lambda: torchvision.models.video.r3d_18(weights=None),
               {"x": ((1, 3, 16, 112, 112), torch.float32)}, ["logits"]),
    "fcn_resnet50": (
        lambda: SegmentationOut(torchvision.models.segmentation.fcn_resnet50(
            weights=None, weights_backbone=None, aux_loss=False)),
        image(), ["out"]),
    "efficientnet_v2_s": (classifier("efficientnet_v2_s"), image(), ["logits"]),
    "regnet_x_1_6gf": (classifier("regnet_x_1_6gf"), image(), ["logits"]),
    "mnasnet1_0": (classifier("mnasnet1_0"), image(), ["logits"]),
    "maxvit_t": (classifier("maxvit_t"), image(), ["logits"]),
    # Two-stage and dense detectors as users export them: one image, post-processing
    # included, the score threshold lowered so random weights still give boxes.
    "fasterrcnn_mobilenet_v3_large_320_fpn": (
        lambda: Detections(torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
            weights=None, weights_backbone=None, box_score_thresh=0.0)),
        {"x": ((3, 320, 320), torch.float32)}, ["boxes", "scores", "labels"]),
    "retinanet_resnet50_fpn": (
        lambda: Detections(torchvision.models.detection.retinanet_resnet50_fpn(
            weights=None, weights_backbone=None, score_thresh=0.0, min_size=512,
            max_size=512)),
        {"x": ((3, 512, 512), torch.float32)}, ["boxes", "scores", "labels"]),
    "maskrcnn_resnet50_fpn": (
        lambda: Detections(torchvision.models.detection.maskrcnn_resnet50_fpn(
            weights=None, weights_backbone=None, box_score_thresh=0.0, min_size=512,
            max_size=512), masks=True),
        {"x": ((3, 512, 512), torch.float32)}, ["boxes", "scores", "labels", "masks"]),
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
    """Seeded inputs: images, video clips and audio N(0, 1) (as normalised
    pictures and waveforms), token ids uniform over [0, 30522) (BERT's
    vocabulary; within GPT-2's too)."""
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
