// Placeholder: being written (issue 6).
#include "codegen/host.h"
