#!/usr/bin/python3
"""torchrun for Debian 12's python3-torch (PyTorch 1.13) under Python 3.11.

Python 3.11 no longer yields an IntFlag's zero or combined members when iterating the class, so
1.13's Std.from_str turns the default "0" of --redirects and --tee into None, and the launcher
fails before it starts any worker ("'NoneType' object has no attribute 'get'"). This mends
Std.from_str and hands over to the real launcher, flags unchanged:

    scripts/torchrun.py --nproc_per_node=2 --no_python build/src/cli/saccade train experiment=smoke

With a newer PyTorch, run its own `torchrun` instead.
"""
import re
import sys

from torch.distributed import run
from torch.distributed.elastic.multiprocessing import api


def std_from_str(cls, text):
    if re.match(api._VALUE_REGEX, text):
        return cls(int(text))
    if re.match(api._MAPPING_REGEX, text):
        return {int(rank): cls(int(value)) for rank, value in (item.split(":") for item in text.split(","))}
    raise ValueError(f"{text} does not match: <{api._VALUE_REGEX}> or <{api._MAPPING_REGEX}>")


api.Std.from_str = classmethod(std_from_str)

if __name__ == "__main__":
    sys.exit(run.main())
