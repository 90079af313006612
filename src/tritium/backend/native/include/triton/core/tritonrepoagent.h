/* Tritium's stand-in for Triton's <triton/core/tritonrepoagent.h>: a repository agent written for
 * Triton compiles unchanged against Tritium's declarations of the same C API. */
#include "../../tritium_triton_api.h"
