// Anchor translation unit that owns the shared torch precompiled header.
#include "torch_pch.h"
