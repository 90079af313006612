"""Triton's testing hooks that hold a batcher back until enough requests are queued.

TRITONSERVER_DELAY_SCHEDULER=N keeps a dynamic batcher (and a sequence batcher's `direct`
slots, and `oldest`'s batching) from forming any batch until N requests are queued (for the
direct sequence batcher, N across all the model's instances);
TRITONSERVER_BACKLOG_DELAY_SCHEDULER=N also waits for N requests in the sequence backlog.
Then the batcher runs as usual. Triton's QA tests set them to make batches deterministic.
"""

from __future__ import annotations

import os
import re

# How often a held-back batcher looks again, as Triton's (10 ms).
RECHECK_S = 0.01


def delay_count(variable: str) -> int:
    """The variable read as C's atoi reads it: its leading digits, 0 without any."""
    match = re.match(r"\s*[+-]?\d+", os.environ.get(variable, ""))
    return max(int(match.group()), 0) if match else 0
