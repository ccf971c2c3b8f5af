// Placeholder: kernels of this file are being written.
#include "codegen/kernels/tk.h"
