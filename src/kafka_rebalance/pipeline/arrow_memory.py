"""Which allocator Arrow's buffers come from, in every process of ours that builds tables (the
``logs`` driver, the in-process engine, Spark's Python workers).

pyarrow's default allocator is mimalloc. In the logs job, which makes and drops buffers of tens of
megabytes (a story task sorts a bucket of 120,000 events, whose line texts alone are 50 MB), it
cost a third of the story's CPU: a ``take`` of the line texts spread over 31 chunks took 226 ms
on mimalloc and 50 ms on the C library's allocator, which reuses the large blocks it has freed
instead of mapping (and faulting in) new ones. The story task of the 1 GB benchmark log, in one
process (``benchmarks/logs_tasks.py``), used 2.31-2.84 CPU-s on mimalloc, 1.51-1.91 on the C
library's, 1.78-2.10 on jemalloc."""

from __future__ import annotations

import os

# A user's own choice of Arrow's allocator (read by pyarrow when it loads) is kept.
ARROW_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"


def use_system_allocator() -> None:
    """Make the C library's allocator Arrow's default in this process (and in the processes it
    forks from now on), unless the user chose one with ``ARROW_DEFAULT_MEMORY_POOL``."""
    if os.environ.get(ARROW_POOL_ENV):
        return
    import pyarrow as pa

    if pa.default_memory_pool().backend_name != "system":
        pa.set_memory_pool(pa.system_memory_pool())
