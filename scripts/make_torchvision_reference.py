#!/usr/bin/env python3
"""Reference tensors from torchvision for saccade's native ResNet/VGG encoders.

For each architecture, builds torchvision's model with a fixed seed (BatchNorm statistics and
affine terms randomized too, so eval-mode BatchNorm is not the identity), and writes into --out:

  <arch>.weights.safetensors    the model's full state_dict (fc.* / classifier.6.* included, so
                                the loader must ignore them), stored as --dtype; the reference is
                                computed with the values rounded through that dtype, so it is exact
  <arch>.reference.safetensors  "input" [B, 3, S, S] f32 and "grid" [B, D, H', W'] f32: the output
                                of the network cut where saccade cuts it (ResNet: after layer4;
                                VGG: features without the last max pool)

The safetensors files are written by export_torchvision_weights.write_safetensors (8-byte header
length, JSON, raw data), so the only requirements are Debian's python3-torch and python3-torchvision.

  python3 scripts/make_torchvision_reference.py --out /tmp/ref --arch resnet18:F32,vgg16:F16
"""
import argparse
import os
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_torchvision_weights import DTYPES, write_safetensors  # noqa: E402


def trunk(arch, model):
    """The part of the network saccade keeps."""
    if arch.startswith("resnet"):
        return torch.nn.Sequential(*list(model.children())[:-2])  # drop avgpool, fc
    return model.features[:-1]  # drop the last max pool


def make(arch, dtype_name, out, size, batch, seed):
    torch.manual_seed(seed)
    model = getattr(torchvision.models, arch)(weights=None, num_classes=10)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.1, 0.1)
                module.running_var.uniform_(0.5, 1.5)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.1, 0.1)
                module.num_batches_tracked.fill_(7)
    model.eval()
    dtype = DTYPES[dtype_name]
    state = model.state_dict()
    if arch.startswith("vgg"):  # fc6/fc7 are 120M parameters: keep only fc8 to test the skipping
        state = {k: v for k, v in state.items() if not k.startswith(("classifier.0.", "classifier.3."))}
    weights = {}
    with torch.no_grad():
        for name, tensor in state.items():
            if tensor.is_floating_point():
                tensor.copy_(tensor.to(dtype).float())  # the model now holds exactly what is stored
                weights[name] = tensor.to(dtype)
            else:
                weights[name] = tensor
        x = torch.randn(batch, 3, size, size)
        grid = trunk(arch, model)(x)
    write_safetensors(f"{out}/{arch}.weights.safetensors", weights)
    write_safetensors(f"{out}/{arch}.reference.safetensors", {"input": x, "grid": grid})
    print(f"{arch}: {len(weights)} tensors as {dtype_name}, grid {list(grid.shape)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder for the .safetensors files")
    parser.add_argument("--arch", default="resnet18:F32,resnet50:BF16,vgg16:F16",
                        help="comma-separated arch[:dtype], dtype F32 | F16 | BF16")
    parser.add_argument("--size", type=int, default=224, help="input height and width")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for item in args.arch.split(","):
        arch, _, dtype_name = item.partition(":")
        make(arch, dtype_name or "F32", args.out, args.size, args.batch, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
