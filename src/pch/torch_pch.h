// The precompiled header shared by every target that includes torch headers.
// Sources still include the narrow headers they use; this only makes them cheap.
#pragma once
#include <torch/torch.h>
