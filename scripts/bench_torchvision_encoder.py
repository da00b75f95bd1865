#!/usr/bin/env python3
"""torchvision's side of `saccade bench encoder`: the same networks, cut where saccade cuts them,
in eval mode under inference_mode, timed the same way (best of the timed runs, at least 2 and at
least 3 s of them, after one warm-up run) on random images with torchvision's initialization.

  python3 scripts/bench_torchvision_encoder.py                 ResNet-50, ResNet-101, VGG-19
  python3 scripts/bench_torchvision_encoder.py resnet101       one network

Run it beside `saccade bench encoder` on the same machine, with the same OpenMP settings
(saccade's bench runs with GOMP_SPINCOUNT=10000 unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set).
"""
import os
import sys
import time

import torch
import torchvision


def trunk(name):
    model = getattr(torchvision.models, name)(weights=None).eval()
    if name.startswith("resnet"):
        return torch.nn.Sequential(*list(model.children())[:-2])  # drop avgpool, fc
    return model.features[:-1]  # VGG: drop the last max pool


def images_per_second(body, images):
    body(images)
    best, spent, runs = 0.0, 0.0, 0
    while runs < 2 or spent < 3.0:
        start = time.perf_counter()
        body(images)
        seconds = time.perf_counter() - start
        spent += seconds
        best = max(best, images.shape[0] / seconds)
        runs += 1
    return best


def main():
    names = sys.argv[1:] or ["resnet50", "resnet101", "vgg19"]
    torch.set_num_threads(os.cpu_count() if "OMP_NUM_THREADS" not in os.environ else torch.get_num_threads())
    print(
        f"torch {torch.__version__}, torchvision {torchvision.__version__}, threads {torch.get_num_threads()}, "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')} "
        f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT', '(unset)')}"
    )
    print(f"{'network':<10} {'size':>5} {'batch':>6} {'torchvision (img/s)':>22}")
    for name in names:
        body = trunk(name)
        for size in (224, 448):
            for batch in (1, 8):
                torch.manual_seed(0)
                images = torch.randn(batch, 3, size, size)
                with torch.inference_mode():
                    rate = images_per_second(body, images)
                print(f"{name:<10} {size:>5} {batch:>6} {rate:>22.2f}", flush=True)


if __name__ == "__main__":
    main()
