#!/usr/bin/env python3
"""Exports a torchvision (or timm) model's state_dict as a safetensors file saccade can load.

  # ImageNet weights from torchvision (downloaded by torchvision on first use):
  python3 scripts/export_torchvision_weights.py --arch resnet101 --out resnet101.safetensors
  saccade train encoder=resnet101 encoder.weights=resnet101.safetensors

  # A state_dict saved with torch.save (e.g. from a fine-tuned model or timm):
  python3 scripts/export_torchvision_weights.py --checkpoint model.pth --out model.safetensors

  # A timm model (needs the timm package):
  python3 scripts/export_torchvision_weights.py --timm resnet50 --out resnet50.safetensors

Names are kept as they are (torchvision and timm name ResNet/VGG parameters the same way), so
the file loads by name. The classifier head (fc.*, classifier.*, head.*, pre_logits.*) is left
out unless --keep-head: saccade's encoders cut it off anyway, and VGG's is 480 MB. --dtype F16 or
BF16 halves the file; saccade converts back to f32 when loading.

The file is written by this script itself (8-byte little-endian header length, JSON header,
raw little-endian data), so only PyTorch is needed, not the safetensors package.
"""
import argparse
import json
import struct
import sys

import torch

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
          "U8": torch.uint8, "BOOL": torch.bool}
NAMES = {dtype: name for name, dtype in DTYPES.items()}
HEAD_PREFIXES = ("fc.", "classifier.", "head.", "pre_logits.")


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} in order, per the safetensors format; `metadata` is {str: str}."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, tensor in tensors.items():
        tensor = tensor.detach().cpu().contiguous()
        if tensor.dtype not in NAMES:
            raise ValueError(f"tensor {name}: dtype {tensor.dtype} has no safetensors equivalent")
        data = tensor.reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": NAMES[tensor.dtype], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for data in blobs:
            out.write(data)


def load_state_dict(args):
    if args.checkpoint:
        state = torch.load(args.checkpoint, map_location="cpu")
        for key in ("state_dict", "model"):  # common wrappers around a state_dict
            if isinstance(state, dict) and key in state and isinstance(state[key], dict):
                state = state[key]
        return state, {"source": args.checkpoint}
    if args.timm:
        import timm  # optional dependency
        model = timm.create_model(args.timm, pretrained=True)
        return model.state_dict(), {"source": "timm:" + args.timm}
    import torchvision
    builder = getattr(torchvision.models, args.arch)
    model = builder(weights=args.weights)
    return model.state_dict(), {"source": f"torchvision:{args.arch}:{args.weights}"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--arch", help="torchvision model name: resnet18 .. resnet152, vgg16, vgg19")
    source.add_argument("--checkpoint", help="a torch.save'd state_dict (.pth) to convert")
    source.add_argument("--timm", help="a timm model name (pretrained weights)")
    parser.add_argument("--weights", default="DEFAULT",
                        help="torchvision weights enum name for --arch (DEFAULT, IMAGENET1K_V1, ...)")
    parser.add_argument("--out", required=True, help="the .safetensors file to write")
    parser.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"],
                        help="storage type of floating-point tensors")
    parser.add_argument("--keep-head", action="store_true", help="keep fc.* / classifier.* tensors")
    args = parser.parse_args()

    state, metadata = load_state_dict(args)
    tensors = {}
    for name, tensor in state.items():
        if not args.keep_head and name.removeprefix("module.").startswith(HEAD_PREFIXES):
            continue
        if tensor.is_floating_point():
            tensor = tensor.to(DTYPES[args.dtype])
        tensors[name] = tensor
    metadata["format"] = "pt"
    write_safetensors(args.out, tensors, metadata)
    print(f"wrote {len(tensors)} tensors to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
