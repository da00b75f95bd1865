#!/usr/bin/python3
"""torchrun for Debian's python3-torch, mended where Debian's builds fail before starting a worker,
then handed over to the real launcher, flags unchanged:

    scripts/torchrun.py --nproc_per_node=2 --no_python build/src/cli/saccade train experiment=smoke

- Debian 12's PyTorch 1.13 under Python 3.11: Python 3.11 no longer yields an IntFlag's zero or
  combined members when iterating the class, so 1.13's Std.from_str turns the default "0" of
  --redirects and --tee into None ("'NoneType' object has no attribute 'get'"). Std.from_str is
  mended.
- Debian 13's PyTorch 2.6: the launcher's TCPStore asks for the libuv server, PyTorch's default
  since 2.4, which Debian's build lacks ("use_libuv was requested but PyTorch was build without
  libuv support"), for every kind of rendezvous. Where the build refuses it, the store is made
  with the classic server, as saccade's own ranks do.

With a PyTorch that has neither problem, run its own `torchrun` instead.
"""
import re
import sys

import torch
import torch.distributed
from torch.distributed import run
from torch.distributed.elastic.multiprocessing import api
from torch.distributed.elastic.rendezvous import c10d_rendezvous_backend, static_tcp_rendezvous


def std_from_str(cls, text):
    if re.match(api._VALUE_REGEX, text):
        return cls(int(text))
    if re.match(api._MAPPING_REGEX, text):
        return {int(rank): cls(int(value)) for rank, value in (item.split(":") for item in text.split(","))}
    raise ValueError(f"{text} does not match: <{api._VALUE_REGEX}> or <{api._MAPPING_REGEX}>")


library_tcp_store = torch.distributed.TCPStore


def tcp_store(*args, **kwargs):
    try:
        return library_tcp_store(*args, **kwargs)
    except RuntimeError as error:
        if "libuv" not in str(error) or kwargs.get("use_libuv") is False:
            raise
    return library_tcp_store(*args, **dict(kwargs, use_libuv=False))


if torch.__version__.startswith("1."):
    api.Std.from_str = classmethod(std_from_str)
else:
    for module in (torch.distributed, static_tcp_rendezvous, c10d_rendezvous_backend):
        module.TCPStore = tcp_store

if __name__ == "__main__":
    sys.exit(run.main())
