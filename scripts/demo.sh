#!/usr/bin/env bash
# The main job on the built-in shapes world: set-up, build, then train the demo experiment.
# Extra arguments are passed to `saccade train` as overrides (e.g. train.epochs=2).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/src/cli/saccade train experiment=shapes_soft "$@"
