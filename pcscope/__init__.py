"""pcscope: evidence-first exploration of huge AArch64 workload profiles."""

import os

__version__ = "0.1.0"

# polars' allocator (jemalloc) keeps freed pages for seconds by default, so an index
# build's parse buffers (~150 MB at 1M rows) would stay resident under every later step
# and set the peak. Returned at once instead; read when polars loads, so it is set before
# any pcscope module can import polars (a process that loaded polars first keeps its own).
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
# numpy's OpenBLAS starts a thread per core when numpy loads (~0.02 s of every command's
# start here); pcscope does no floating-point matrix work, so one thread is all it needs.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
