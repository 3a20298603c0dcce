"""The sample workloads: modules, symbol pools, code mix, weights and planted categories."""

from __future__ import annotations

from dataclasses import dataclass

from pcscope.samples.alpgen import Env

ALL_CATEGORIES = (
    "indirect-branch", "branch-mispredict", "dependent-load", "cache-miss", "atomic-llsc",
    "atomic-contention", "barrier", "division", "store-forwarding", "spin-wait", "tlb-miss",
    "fp-dependency",
)


@dataclass(frozen=True)
class ModuleSpec:
    name: str
    role: str                 # "main", "lib" or "jit": decides where it is mapped
    share: float              # fraction of the windows
    names: tuple[str, ...] = ()
    hidden: float = 0.3       # fraction of functions shown as <unknown_N>
    blank: float = 0.0        # fraction with no function name at all
    plt: bool = False         # has a PLT window of stubs (the main binary)


@dataclass(frozen=True)
class KindSpec:
    name: str
    summary: str
    windows: int                       # default number of windows
    modules: tuple[ModuleSpec, ...]
    sigma: float                       # lognormal sigma of window weights (heavier tail)
    total: int                         # sum of the weight column over the file
    labels: bool                       # write a `window` column
    cycles: bool                       # write a `cycles` column (then weights use it)
    categories: tuple[str, ...]        # planted issues, each with a look-alike
    mix: tuple[tuple[str, float], ...]  # background templates and their weights
    env: Env
    rows_median: float = 14.0          # instructions per window: lognormal median …
    rows_sigma: float = 0.8
    rows_max: int = 300
    loop_prob: float = 0.7
    shuffle_rows: bool = False         # rows not in address order
    zero_rows: bool = False            # rows with 0 samples are written
    omit: float = 0.0                  # share of hot windows with rows missing from the profile
    record_chars: int = 285            # average raw ALP record length (for --alp-tokens)


_LIBC = ModuleSpec("libc.so.6", "lib", 0.18, (
    "malloc", "free", "calloc", "realloc", "memcpy", "memmove", "memset", "memcmp", "strlen",
    "strcmp", "strncmp", "strchr", "strrchr", "memchr", "pthread_mutex_lock",
    "pthread_mutex_unlock", "pthread_cond_signal", "pthread_cond_wait", "pthread_once",
    "epoll_wait", "read", "write", "writev", "recvmsg", "sendmsg", "clock_gettime", "qsort",
    "snprintf", "vfprintf", "strtoul", "getenv", "__libc_malloc", "__libc_free",
    "_int_malloc", "_int_free", "malloc_consolidate", "__memcpy_simd", "__strlen_asimd",
), hidden=0.3)

_LDSO = ModuleSpec("ld-linux-aarch64.so.1", "lib", 0.03, (
    "_dl_runtime_resolve", "_dl_lookup_symbol_x", "_dl_relocate_object", "__tls_get_addr",
    "_dl_fixup",
), hidden=0.4)

A = KindSpec(
    name="A",
    summary=(
        "A flat infrastructure daemon (fleetd: RPC framing, compression, TLS, metrics) whose "
        "time is spread thinly over many runtime, library and anonymous windows; no single "
        "window dominates. Rows carry samples only and no window labels, so windows are "
        "derived from function changes and address gaps; some rows have 0 samples. Planted "
        "issues are synchronisation problems (exclusive-pair retries, LSE contention, "
        "barriers, spinning), each next to a healthy look-alike of the same shape."),
    windows=2600,
    modules=(
        ModuleSpec("fleetd", "main", 0.42, (
            "main", "event_loop_run", "conn_read_frame", "conn_write_frame",
            "proto_decode_varint", "proto_encode_msg", "proto_skip_field", "metrics_flush",
            "metrics_counter_add", "ring_push", "ring_pop", "timer_wheel_tick",
            "log_format_line", "log_ring_append", "hash_crc32c", "cfg_lookup",
            "http_parse_header", "http_find_eol", "sched_worker_loop", "pool_alloc", "pool_free",
            "stats_histogram_add", "lru_touch", "dns_cache_get", "uuid_format",
            "ratelimit_check", "json_escape", "base64_encode", "conn_table_find",
            "route_match", "session_expire", "buf_compact",
        ), hidden=0.55, plt=True),
        _LIBC,
        ModuleSpec("libcrypto.so.3", "lib", 0.1, (
            "EVP_DigestUpdate", "EVP_EncryptUpdate", "EVP_CipherUpdate", "BN_mod_mul_montgomery",
            "bn_mul_mont", "sha256_block_data_order", "aes_v8_ctr32_encrypt_blocks",
            "gcm_ghash_v8", "CRYPTO_gcm128_encrypt", "ossl_ec_GFp_mont_field_mul",
        ), hidden=0.5),
        ModuleSpec("libz.so.1", "lib", 0.08, (
            "deflate", "inflate", "adler32_z", "crc32_z", "deflate_slow", "inflate_fast",
            "compress_block", "longest_match", "fill_window",
        ), hidden=0.4),
        ModuleSpec("libstdc++.so.6", "lib", 0.07, (
            "operator new(unsigned long)", "operator delete(void*, unsigned long)",
            "std::_Hash_bytes(void const*, unsigned long, unsigned long)",
            "std::string::_M_mutate(unsigned long, unsigned long, char const*, unsigned long)",
            "std::_Rb_tree_increment(std::_Rb_tree_node_base*)",
        ), hidden=0.3),
        _LDSO,
        ModuleSpec("[jit]", "jit", 0.12, hidden=0.9, blank=0.1),
    ),
    sigma=1.0,
    total=24_000_000,
    labels=False,
    cycles=False,
    categories=("atomic-llsc", "atomic-contention", "barrier", "spin-wait"),
    mix=(
        ("field_update", 3), ("array_sum", 2), ("byte_scan", 3), ("memcpy_simd", 2),
        ("call_site", 4), ("hash_mix", 2), ("crc_block", 2), ("bitfield", 3),
        ("string_cmp", 2), ("lock_fast", 1), ("stack_spill", 3), ("prefetch_stream", 1),
        ("const_addr", 2), ("select_minmax", 3), ("madd_index", 1), ("pre_index_walk", 2),
        ("simd_fma", 1), ("hash_probe", 1),
    ),
    env=Env(l1d_median=0.01, l1d_max=0.1, cond_mispredict=0.04, indirect_mispredict=0.01,
            mem_fields=("accesses", "l1d_miss", "l2_miss", "llc_miss"),
            loop_key_always=False),
    rows_median=11.0,
    zero_rows=True,
    record_chars=256,
)

B = KindSpec(
    name="B",
    summary=(
        "A lookup-heavy key-value service (kvlookup: hash tables, bloom filters, LRU lists, "
        "sorted indexes) where memory locality dominates: background loads miss more than "
        "elsewhere. Rows carry samples and cycles (weights use cycles) and explicit window "
        "labels; rows are not in address order and some cold instructions of hot windows "
        "are absent from the profile but present in the ALP (unmatched records). Planted "
        "issues are pointer chasing, streaming misses, TLB misses, failed store forwarding "
        "and data-dependent branches, each next to a healthy look-alike."),
    windows=2400,
    modules=(
        ModuleSpec("kvlookup", "main", 0.55, (
            "kv::Shard::find(std::string_view) const", "kv::Shard::insert(kv::Entry&&)",
            "kv::Table::probe(unsigned long) const", "BloomFilter::MayContain(unsigned long) const",
            "lru::List::touch(lru::Node*)", "lru::List::evict_one()",
            "Index::lower_bound(unsigned long) const",
            "Codec::decode_varint(unsigned char const*, unsigned char const*)",
            "Request::parse(std::string_view)", "Response::serialize(Buffer&) const",
            "Router::route(Request const&)", "Arena::allocate(unsigned long)",
            "kv::Entry::compare(kv::Key const&) const", "SkipList::find(unsigned long) const",
            "Compactor::merge_runs()", "Checksum::update(void const*, unsigned long)",
            "Stats::record_latency(unsigned long)", "main",
        ), hidden=0.15, plt=True),
        _LIBC,
        ModuleSpec("libstdc++.so.6", "lib", 0.12, (
            "operator new(unsigned long)", "operator delete(void*, unsigned long)",
            "std::_Hash_bytes(void const*, unsigned long, unsigned long)",
            "std::string::_M_replace(unsigned long, unsigned long, char const*, unsigned long)",
            "std::__detail::_Prime_rehash_policy::_M_need_rehash(unsigned long, unsigned long, "
            "unsigned long) const",
        ), hidden=0.3),
        ModuleSpec("libtcmalloc_minimal.so.4", "lib", 0.12, (
            "tcmalloc::ThreadCache::Allocate(unsigned long, unsigned int)",
            "tcmalloc::CentralFreeList::RemoveRange(void**, void**, int)",
            "tcmalloc::ThreadCache::Scavenge()", "tc_malloc", "tc_free",
        ), hidden=0.4),
    ),
    sigma=1.6,
    total=9_000_000_000,
    labels=True,
    cycles=True,
    categories=("dependent-load", "cache-miss", "tlb-miss", "store-forwarding",
                "branch-mispredict"),
    mix=(
        ("hash_probe", 5), ("binary_search", 3), ("hash_mix", 3), ("string_cmp", 3),
        ("array_sum", 2), ("field_update", 2), ("call_site", 3), ("bitfield", 2),
        ("stack_spill", 2), ("memcpy_simd", 1), ("pre_index_walk", 2), ("madd_index", 2),
        ("crc_block", 1), ("select_minmax", 2), ("prefetch_stream", 1),
    ),
    env=Env(l1d_median=0.04, l1d_max=0.18, cond_mispredict=0.05, indirect_mispredict=0.02,
            asm_style="upper"),
    shuffle_rows=True,
    omit=0.3,
    record_chars=281,
)

C = KindSpec(
    name="C",
    summary=(
        "A framework/runtime profile (a managed runtime, librtvm.so, running JIT-compiled "
        "application code in [jit]) with interpreter dispatch, virtual calls, object field "
        "loads and GC barriers; much of the code is anonymous JIT code, some without any "
        "function name. Rows carry samples and cycles (weights use cycles) and no window "
        "labels. Planted issues are mispredicted indirect dispatch, pointer chasing, "
        "data-dependent branches, division on the critical path and an FP dependency chain, "
        "each next to a healthy look-alike."),
    windows=3000,
    modules=(
        ModuleSpec("[jit]", "jit", 0.45, hidden=0.8, blank=0.2),
        ModuleSpec("librtvm.so", "lib", 0.33, (
            "Interpreter::run(Frame*)", "Interpreter::dispatch_invoke(Frame*, Method*)",
            "ObjectModel::load_klass(Object*)", "GC::mark_object(Object*)",
            "GC::scan_card_table(unsigned long, unsigned long)",
            "Runtime::resolve_call(CallSite*, Object*)", "InlineCache::lookup(Klass*)",
            "HashTable::get(Object*) const", "StringTable::intern(char const*, int)",
            "Method::invoke_virtual(Object*, Args*)", "Monitor::enter(Thread*)",
            "TLAB::allocate_slow(unsigned long)", "Deoptimizer::unpack_frames()",
            "Safepoint::poll_slow(Thread*)", "CodeCache::find_blob(void*)",
            "Frame::sender(RegisterMap*) const", "BytecodeStream::next()",
        ), hidden=0.3),
        ModuleSpec("appserver", "main", 0.05, ("main", "worker_main", "handle_signal"),
                   hidden=0.5, plt=True),
        _LIBC,
    ),
    sigma=2.0,
    total=6_000_000_000,
    labels=False,
    cycles=True,
    categories=("indirect-branch", "dependent-load", "branch-mispredict", "division",
                "fp-dependency"),
    mix=(
        ("interp_dispatch", 2), ("vcall", 3), ("oop_load", 5), ("card_mark", 2),
        ("safepoint_poll", 2), ("bump_alloc", 2), ("field_update", 3), ("call_site", 3),
        ("hash_probe", 2), ("select_minmax", 2), ("stack_spill", 2), ("fp_scalar", 1),
        ("fp_convert", 1), ("simd_fma", 1), ("bitfield", 2), ("array_sum", 1),
    ),
    env=Env(l1d_median=0.02, l1d_max=0.12, cond_mispredict=0.05, indirect_mispredict=0.06),
    rows_median=13.0,
    record_chars=288,
)

PLANTED = KindSpec(
    name="planted",
    summary=(
        "A compact test set: every issue category planted once in its own hot window, each "
        "with a benign look-alike of the same shape in another hot window of similar "
        "weight, amid background code. Rows carry samples and window labels."),
    windows=240,
    modules=(
        ModuleSpec("plantd", "main", 0.6, (
            "worker_run", "task_step", "queue_drain", "table_scan", "state_update",
            "batch_commit", "frame_decode", "record_merge", "index_walk", "slot_release",
            "channel_poll", "vector_reduce",
        ), hidden=0.5, plt=True),
        _LIBC,
        ModuleSpec("[jit]", "jit", 0.15, hidden=0.9, blank=0.1),
    ),
    sigma=1.4,
    total=5_000_000,
    labels=True,
    cycles=False,
    categories=ALL_CATEGORIES,
    mix=A.mix,
    env=Env(l1d_median=0.01, l1d_max=0.08, cond_mispredict=0.03, indirect_mispredict=0.005),
    record_chars=271,
)

KINDS: dict[str, KindSpec] = {k.name: k for k in (A, B, C, PLANTED)}
