"""The raw NVVM primitive layer (`cutlass.experimental.primitives`, also imported as
`cutlass.primitives`; cuDNN's frost and QSA kernels call it as `nvvm.` / `prims.`), mapped onto
the operations the model already has for the CuTe layer:

- `cp_async_bulk_tensor_shared_{cta,cluster}_global`: a TMA load completing its bytes on an
  mbarrier, as `cute.copy(tma_atom, ..., tma_bar_ptr=)` (multicast and cta_group::2 included);
- `cp_async_bulk_tensor_global_shared_cta`: a TMA store, drained through the bulk-group
  `cp_async_bulk_commit_group` / `cp_async_bulk_wait_group`;
- `tcgen05_mma`: an MMA reading its SMEM operands (through `Tcgen05SmemDesc.build` descriptors)
  and writing its TMEM accumulator, as `cute.gemm` on Blackwell; `tcgen05_commit`: the arrive
  that signals the issuing thread's MMAs, as `tcgen05.commit`;
- raw TMEM pointers (`make_tmem_ptr(tmem_base + column, dtype)`), `tcgen05_ld` / `tcgen05_wait`
  (an asynchronous read retired by `wait::ld`, as a `cute.copy` from TMEM and
  fence_view_async_tmem_load), `tcgen05_st`, `tcgen05_cp`;
- `ldmatrix` / `stmatrix` (warp reads and writes of shared memory), `fence_proxy` by proxy kind,
  the tensormap-proxy `fence_proxy_release` / `_acquire` and `tensormap_replace` (descriptor
  updates), `clusterlaunchcontrol_try_cancel` (the CLC query), `red` (an atomic).

A raw TMEM address is a number the kernel computes (lane in the upper half, column in the
lower), and an access covers as many columns as its shape and repeat count say, which the model
does not track: every raw TMEM pointer is the CTA's whole tensor memory (TMEM_RAW), and a race
found through one is a possible race (P16), never a definite one.

Each handler has the interpreter's handler signature `(it, args, kwargs, node)`; `interp`
registers them in its CALLS table. What a call leaves unresolved is reported unmodeled with the
reason, never skipped.
"""
import libcst as cst

from . import interp as I
from . import pipelines as P
from .interp import (TMEM_ST, RawAccess, RawAsyncRead, RawAsyncReadWait, RawTmaStore, Smem, Unknown, _kw, _lowest,
                     _tmem_buffer, emit_tma_load, h_bulk_commit, h_bulk_wait, h_gemm)
from .values import TMEM_UNKNOWN_OFFSET, CtaGroupOp, ModuleRef

TMEM_RAW = ("TMEM: a raw TMEM pointer (`make_tmem_ptr`) is taken as the CTA's whole tensor memory (the columns and "
            "lanes an access covers are not tracked); a race through one is reported as possible")
BLOCK_SCALE_READS = ("TMEM: a block-scaled MMA's scale-factor reads are taken as covered by its accumulator's write of "
                     "the whole tensor memory (every access that could race with them races with that write)")
TMEM_THREAD_SYNC_FENCE = ("TMEM: tcgen05.fence::before_thread_sync / after_thread_sync are taken as given (tcgen05 "
                          "operations are ordered by the barriers around them alone)")


def _cta_group(v):
    """2 for `CTAGroup.CTA_2` / "cta_2", 1 for CTA_1 / "cta_1" / None (the default), None when the
    group did not fold."""
    if v is None:
        return 1
    name = v.qualname.rsplit(".", 1)[-1] if isinstance(v, ModuleRef) else v if isinstance(v, str) else None
    if name is None:
        return None
    return {"cta_1": 1, "cta_2": 2, "one": 1, "two": 2}.get(name.lower())


def _tensor_load(it, args, kwargs, node, what: str, cluster: bool):
    dst, bar = _kw(args, kwargs, 0, "dst_mem"), it.bar_of(_kw(args, kwargs, 3, "mbar"), node)
    if bar is None:
        return None
    if not isinstance(dst, Smem):
        it.unmodeled(node, what, "the destination in shared memory could not be resolved")
        return None
    group = _cta_group(kwargs.get("group")) if cluster else 1
    if group is None:
        it.unmodeled(node, what, "the CTA group did not fold")
        return None
    # The bytes are the tensor map's box, not the array the pointer points into: not known.
    return emit_tma_load(it, bar, dst.at(nbytes=None), kwargs.get("multicast_mask") if cluster else None,
                         group == 2, node)


def h_tensor_load_cta(it, args, kwargs, node):
    """`cp_async_bulk_tensor_shared_cta_global(dst, tma_desc, coords, mbar)`: a TMA tile load into
    this CTA's shared memory completing the tile's bytes on `mbar`."""
    return _tensor_load(it, args, kwargs, node, "primitives.cp_async_bulk_tensor_shared_cta_global", False)


def h_tensor_load_cluster(it, args, kwargs, node):
    """`cp_async_bulk_tensor_shared_cluster_global(dst, tma_desc, coords, mbar, im2col,
    multicast_mask=, group=)`: the same load, multicast to the CTAs of the mask, and with
    `group=CTA_2` completing on the pair leader's barrier."""
    return _tensor_load(it, args, kwargs, node, "primitives.cp_async_bulk_tensor_shared_cluster_global", True)


def _h_tensor_store(construct: str):
    def h(it, args, kwargs, node):
        """`cp_async_bulk_tensor_global_shared_cta(tma_desc, src, coords)`: a TMA store reading `src`
        until a `cp_async_bulk_wait_group(n, read=True)` retires its bulk group; and
        `cp_async_bulk_tensor_reduce(tma_desc, src, op, coords)`, the same copy reducing into
        global memory (which orders nothing more than a store)."""
        src = _kw(args, kwargs, 1, "src_mem")
        if not isinstance(src, Smem):
            it.unmodeled(node, construct, "the source in shared memory could not be resolved")
            return None
        it.emit(RawTmaStore(it.span(node), src, None, it.mask))
        return None
    return h


h_tensor_store = _h_tensor_store("primitives.cp_async_bulk_tensor_global_shared_cta")


def h_commit(it, args, kwargs, node):
    """`tcgen05_commit(mbar, multicast_mask=, group=)`: one arrive on `mbar` (on the barrier at the
    same offset in each CTA of the mask) once the thread's earlier tcgen05 operations end."""
    group = _cta_group(kwargs.get("group"))
    mask = kwargs.get("multicast_mask")
    if group is None:
        it.unmodeled(node, "primitives.tcgen05_commit", "the CTA group did not fold")
        return None
    if group == 2 and mask is not None and it.ctx.cluster < 2:
        it.unmodeled(node, "primitives.tcgen05_commit(group=CTA_2)", "a 2-CTA commit outside a cluster of 2 or more CTAs")
        return None
    bar = it.bar_of(_kw(args, kwargs, 0, "addr"), node)
    return None if bar is None else P.h_tcgen05_commit(it, [bar], {"mask": mask}, node)


def h_smem_descriptor(it, args, kwargs, node):
    """`Tcgen05SmemDesc.build(start_address=ptr, ...)`: an MMA operand descriptor. It stands for
    the shared memory it starts at (`.advance_start_address(n)` stays inside it), so that the MMA
    reading it reads that buffer."""
    start = _kw(args, kwargs, 0, "start_address")
    return start if isinstance(start, Smem) and not start.tmem else Unknown("SMEM descriptor")


def h_raw_smem_descriptor(it, args, kwargs, node):
    """The versioned descriptor intrinsic `nvvm_wrapper._tcgen05_mma_smem_desc_v2(addr >> 4, lbo,
    sbo, version, ...)` (cuDNN frost's `SmemTile.desc` for Rubin, with `addr =
    Int32(llvm.ptrtoint(T, base.ir_value()))`): it encodes the start address of the buffer `addr`
    points into, as `Tcgen05SmemDesc.build` does. Only that encoding is followed: the address
    shifted right by the descriptor's 4-bit granule, of a plain name."""
    start = args[0] if args else None
    arg = node.args[0].value if isinstance(node, cst.Call) and node.args else None
    if not isinstance(start, Smem) and isinstance(arg, cst.BinaryOperation) \
            and isinstance(arg.operator, cst.RightShift) and isinstance(arg.left, cst.Name):
        start = it.eval(arg.left)
    return start if isinstance(start, Smem) and not start.tmem else Unknown("SMEM descriptor")


def h_descriptor_value(it, args, kwargs, node):
    """`Tcgen05SmemDesc(raw)`: the descriptor class around a raw 64-bit descriptor value, which
    stands for the buffer it encodes (h_raw_smem_descriptor)."""
    raw = args[0] if args else kwargs.get("desc")
    return raw if isinstance(raw, Smem) and not raw.tmem else Unknown("SMEM descriptor")


def h_mma(it, args, kwargs, node):
    """`tcgen05_mma(kind, cta_group, d, a, b, idesc, enable_input_d)`: reads its A operand (SMEM
    descriptor or TMEM) and its B operand (SMEM descriptor), writes the TMEM accumulator `d`."""
    group = _cta_group(_kw(args, kwargs, 1, "cta_group"))
    d, a, b = _kw(args, kwargs, 2, "d"), _kw(args, kwargs, 3, "a"), _kw(args, kwargs, 4, "b")
    if not isinstance(d, Smem):
        # `d` is a TMEM address whatever its value (frost: the address `tcgen05_alloc` wrote,
        # loaded from shared memory plus column offsets): the whole tensor memory (TMEM_RAW).
        d = h_make_tmem_ptr(it, [d], {}, node)
    unresolved = [name for name, v, ok in (("accumulator", d, isinstance(d, Smem) and d.tmem),
                                           ("A operand", a, isinstance(a, Smem)),
                                           ("B operand", b, isinstance(b, Smem) and not b.tmem)) if not ok]
    if group is None:
        unresolved.insert(0, "CTA group")
    if unresolved:
        it.unmodeled(node, "primitives.tcgen05_mma",
                     "not traced to shared or tensor memory: " + ", ".join(unresolved))
        return None
    return h_gemm(it, [CtaGroupOp("tcgen05 MMA", ctas=group), d, a, b], {}, node)


def h_mma_block_scale(it, args, kwargs, node):
    """`tcgen05_mma_block_scale(kind, cta_group, d, a, b, idesc, enable_input_d, scale_a, scale_b)`:
    `tcgen05_mma` that also reads its scale factors from TMEM. With the accumulator the whole
    tensor memory (a raw address, TMEM_RAW) those reads are covered by its write of all of it
    (every access they could race with races with that write). With a precise accumulator (the
    allocation's address plus known columns) the scale factors are the TMEM their addresses name,
    read by the MMA at issue like a TMEM A operand (TMEM_MMA); one that is no TMEM address leaves
    the MMA unmodeled."""
    d = _kw(args, kwargs, 2, "d")
    d = d if isinstance(d, Smem) else h_make_tmem_ptr(it, [d], {}, node)
    scales = []
    if not (d.tmem and d.offset == TMEM_UNKNOWN_OFFSET):
        scales = [h_make_tmem_ptr(it, [v], {}, node) if not isinstance(v, Smem) else v
                  for v in (_kw(args, kwargs, 7, "scale_a"), _kw(args, kwargs, 8, "scale_b"))]
        if not d.tmem or not all(v.tmem for v in scales):
            it.unmodeled(node, "primitives.tcgen05_mma_block_scale",
                         "the scale factors are not traced to tensor memory beside a precise accumulator view")
            return None
    else:
        it.registry.assume(BLOCK_SCALE_READS)
    for v in scales:
        for cta in I.mma_ctas(it, CtaGroupOp("tcgen05 MMA", ctas=_cta_group(_kw(args, kwargs, 1, "cta_group")))):
            it.emit(RawAccess(it.span(node), v.at(cta=cta), False, _lowest(it.mask), False, not v.inexact))
    plain = list(args[:7]) if len(args) >= 7 else list(args)
    rest = {k: v for k, v in kwargs.items() if k not in ("scale_a", "scale_b", "scale_vec_size")}
    if len(plain) > 2:
        plain[2] = d
    else:
        rest["d"] = d
    return h_mma(it, plain, rest, node)


def h_make_tmem_ptr(it, args, kwargs, node):
    """`make_tmem_ptr(addr, dtype)`: the columns `addr` names where it is the allocation's address
    plus a known column offset (interp `loaded_word`); else, as for
    `make_tmem_ptr_from_warp_row_col(base, warp, col, dtype)`, a view of this CTA's tensor memory,
    somewhere in it (TMEM_RAW)."""
    addr = _kw(args, kwargs, 0, "addr")
    if isinstance(addr, Smem) and addr.tmem:
        # The element type decides what `.subview(k)` steps by (interp: columns for a byte pointer).
        return addr.at(dtype=I.as_dtype(_kw(args, kwargs, 1, "dtype")))
    return h_tmem_somewhere(it, args, kwargs, node)


def h_tmem_address(it, args, kwargs, node):
    """`TmemAddr.from_row_col(row, col)` (QSA's operand addresses, `.as_ptr(dtype)` after it): the
    columns `col` names where it is the allocation's address plus known columns (the lanes an
    access covers are not tracked); otherwise a plain number, which a tcgen05 operation takes as
    the whole tensor memory."""
    col = _kw(args, kwargs, 1, "col")
    if isinstance(col, Smem) and col.tmem:
        return col
    return Unknown("TMEM address")


def h_tmem_somewhere(it, args, kwargs, node):
    """A TMEM pointer whose columns are not traced: the CTA's whole tensor memory (TMEM_RAW)."""
    it.registry.assume(TMEM_RAW)
    return _tmem_buffer(it).at(offset=TMEM_UNKNOWN_OFFSET, inexact=True)


def _tmem_operand(it, v, node, what):
    """The TMEM a tcgen05.ld/st/cp address names: its view, or for a plain address (a number, a
    `TmemAddr`) the whole tensor memory (the operand is a TMEM address whatever its value)."""
    if isinstance(v, Smem) and v.tmem:
        return v
    if isinstance(v, Smem):
        it.unmodeled(node, what, "the TMEM address is a shared-memory pointer")
        return None
    return h_make_tmem_ptr(it, [v], {}, node)


def h_tmem_load(it, args, kwargs, node):
    """`tcgen05_ld(shape, tmem_addr, num=)`: the warp's asynchronous read of TMEM into registers,
    complete at the thread's next `tcgen05_wait(LOAD)`."""
    t = _tmem_operand(it, _kw(args, kwargs, 1, "tmem_addr"), node, "primitives.tcgen05_ld")
    if t is not None:
        it.emit(RawAsyncRead(it.span(node), t, it.mask, "tmem_ld"))
    return Unknown("TMEM load")


def h_tmem_store(it, args, kwargs, node):
    """`tcgen05_st(shape, tmem_addr, values)`: the warp writes TMEM, taken as complete at issue (TMEM_ST)."""
    t = _tmem_operand(it, _kw(args, kwargs, 1, "tmem_addr"), node, "primitives.tcgen05_st")
    if t is not None:
        it.registry.assume(TMEM_ST)
        it.emit(RawAccess(it.span(node), t, True, it.mask, False, False))
    return None


def h_tmem_copy(it, args, kwargs, node):
    """`tcgen05_cp(shape, taddr, smem_desc)`: one thread's SMEM -> TMEM copy, taken at issue (TMEM_ST)."""
    t = _tmem_operand(it, _kw(args, kwargs, 1, "taddr"), node, "primitives.tcgen05_cp")
    src = _kw(args, kwargs, 2, "smem_desc")
    if not isinstance(src, Smem) or src.tmem:
        it.unmodeled(node, "primitives.tcgen05_cp", "the SMEM descriptor is not traced to shared memory")
        return None
    if t is not None:
        it.registry.assume(TMEM_ST)
        it.access(src, False, node)
        it.emit(RawAccess(it.span(node), t, True, _lowest(it.mask), False, False))
    return None


def _kind_name(v) -> str:
    return (v.qualname.rsplit(".", 1)[-1] if isinstance(v, ModuleRef) else v if isinstance(v, str) else "").lower()


def h_tmem_wait(it, args, kwargs, node):
    """`tcgen05_wait(LOAD)`: the thread's tcgen05.ld are complete; `tcgen05_wait(STORE)`: its
    tcgen05.st are (taken as complete at issue already, TMEM_ST)."""
    kind = _kind_name(_kw(args, kwargs, 0, "kind"))
    if kind in ("load", "ld"):
        it.emit(RawAsyncReadWait(it.span(node), 0, it.mask, "tmem_ld"))
    elif kind in ("store", "st"):
        it.registry.assume(TMEM_ST)
    else:
        it.unmodeled(node, "primitives.tcgen05_wait", "the wait kind did not fold to LOAD or STORE")
    return None


PROXY_KINDS = {"async_shared": "async.shared", "async.shared": "async.shared", "async_global": "async.global",
               "async.global": "async.global", "alias": "alias", "tensormap": "tensormap", "generic": "generic"}


def h_fence_proxy(it, args, kwargs, node):
    """`fence_proxy(Proxy.ASYNC_SHARED, space=...)`: cute.arch.fence_proxy of that kind; the
    unqualified `Proxy.ASYNC` (every state space) is both the shared and the global fence."""
    kind = _kind_name(_kw(args, kwargs, 0, "kind"))
    if kind == "async":
        I.h_fence_proxy(it, ["async.shared"], {}, node)
        return I.h_fence_proxy(it, ["async.global"], {}, node)
    return I.h_fence_proxy(it, [PROXY_KINDS.get(kind)], {}, node)


def h_red(it, args, kwargs, node):
    """`red(ReductionOp.ADD, ReductionType.F32, ptr, value, mem_order=, mem_scope=)`: the atomic
    of that op without a result, as `atomicrmw`."""
    kw = {k: v for k, v in (("mem_order", kwargs.get("mem_order")), ("syncscope", kwargs.get("mem_scope")))
          if v is not None}
    I.h_prim_atomicrmw(it, [_kw(args, kwargs, 0, "op"), _kw(args, kwargs, 2, "a"), _kw(args, kwargs, 3, "b")], kw, node)
    return None


def h_ldmatrix(it, args, kwargs, node):
    """`ldmatrix(ptr, num, layout)`: the warp reads 8x8 tiles whose rows each lane's `ptr` names,
    a read of the buffer (its elements not tracked: inexact, P16)."""
    return _matrix_access(it, _kw(args, kwargs, 0, "ptr"), False, node, "primitives.ldmatrix")


def h_stmatrix(it, args, kwargs, node):
    """`stmatrix(ptr, sources, layout)`: the warp writes 8x8 tiles, as ldmatrix in reverse."""
    return _matrix_access(it, _kw(args, kwargs, 0, "ptr"), True, node, "primitives.stmatrix")


def _matrix_access(it, ptr, write: bool, node, what):
    if isinstance(ptr, Smem) and not ptr.tmem:
        it.access(ptr.at(inexact=True), write, node)
    else:
        it.unmodeled(node, what, "the pointer could not be resolved to a shared-memory buffer")
    return None if write else Unknown("matrix fragment")


def _names_tensormap(*values) -> bool:
    return any(_kind_name(v) == "tensormap" for v in values)


def _one_way_proxy_fence(name: str):
    """`fence_proxy_release(scope, from_proxy=GENERIC, to_proxy=TENSORMAP)` /
    `fence_proxy_acquire(scope, addr, size, ...)`: the tensormap-proxy fences around a TMA
    descriptor update, as `fence_tma_desc_release` / `_acquire` (TENSORMAP_PROXY)."""
    def h(it, args, kwargs, node):
        if not _names_tensormap(kwargs.get("from_proxy"), kwargs.get("to_proxy")):
            it.unmodeled(node, f"primitives.{name}", "only the tensormap proxy fences are modeled")
            return None
        it.registry.assume(I.TENSORMAP_PROXY)
        return None
    return h


def h_tensormap_replace(it, args, kwargs, node):
    """`tensormap_replace(field, desc_ptr, new_value=)`: a write of the TMA descriptor in memory
    (TENSORMAP_PROXY: the TMA unit's reads of it are not modeled)."""
    desc = _kw(args, kwargs, 1, "addr")
    if not isinstance(desc, (Smem, I.Gmem)) or isinstance(desc, Smem) and desc.tmem:
        it.unmodeled(node, "primitives.tensormap_replace", "the descriptor's address could not be resolved")
        return None
    it.registry.assume(I.TENSORMAP_PROXY)
    it.access(desc.at(inexact=True) if isinstance(desc, Smem) else desc, True, node)
    return None


def h_clc_try_cancel(it, args, kwargs, node):
    """`clusterlaunchcontrol_try_cancel(response, mbar, multicast=1)`: the cluster launch control
    query, its 16-byte response written into `response` of every CTA of the cluster, completing
    on `mbar` (as cute.arch.issue_clc_query)."""
    response, bar = _kw(args, kwargs, 0, "addr"), _kw(args, kwargs, 1, "mbar")
    multicast = kwargs.get("multicast")
    if it.ctx.cluster > 1 and multicast in (None, 0, False):
        it.unmodeled(node, "primitives.clusterlaunchcontrol_try_cancel",
                     "a query without multicast in a cluster (its response reaches one CTA only)")
        return None
    bar = it.bar_of(bar, node)
    return None if bar is None else P.clc_query(it, bar, node, response)


def h_tmem_thread_sync_fence(it, args, kwargs, node):
    it.registry.assume(TMEM_THREAD_SYNC_FENCE)
    return None


HANDLERS = {
    "primitives.cp_async_bulk_tensor_shared_cta_global": h_tensor_load_cta,
    "primitives.cp_async_bulk_tensor_shared_cluster_global": h_tensor_load_cluster,
    "primitives.cp_async_bulk_tensor_global_shared_cta": h_tensor_store,
    "primitives.cp_async_bulk_tensor_reduce": _h_tensor_store("primitives.cp_async_bulk_tensor_reduce"),
    "primitives.cp_async_bulk_commit_group": h_bulk_commit,
    "primitives.cp_async_bulk_wait_group": h_bulk_wait,
    "primitives.tcgen05_commit": h_commit,
    "primitives.tcgen05_mma": h_mma, "primitives.tcgen05_mma_block_scale": h_mma_block_scale,
    "primitives.Tcgen05SmemDesc.build": h_smem_descriptor, "primitives.WgmmaSmemDesc.build": h_smem_descriptor,
    "primitives.Tcgen05SmemDesc": h_descriptor_value,
    "primitives.nvvm_wrapper._tcgen05_mma_smem_desc_v2": h_raw_smem_descriptor,
    "primitives.make_tmem_ptr": h_make_tmem_ptr, "primitives.make_tmem_ptr_from_warp_row_col": h_tmem_somewhere,
    "primitives.TmemAddr.from_row_col": h_tmem_address,
    "primitives.tcgen05_ld": h_tmem_load, "primitives.tcgen05_st": h_tmem_store, "primitives.tcgen05_cp": h_tmem_copy,
    "primitives.tcgen05_wait": h_tmem_wait, "primitives.tcgen05_fence": h_tmem_thread_sync_fence,
    "primitives.fence_proxy": h_fence_proxy, "primitives.red": h_red,
    "primitives.ldmatrix": h_ldmatrix, "primitives.stmatrix": h_stmatrix,
    "primitives.fence_proxy_release": _one_way_proxy_fence("fence_proxy_release"),
    "primitives.fence_proxy_acquire": _one_way_proxy_fence("fence_proxy_acquire"),
    "primitives.tensormap_replace": h_tensormap_replace,
    "primitives.clusterlaunchcontrol_try_cancel": h_clc_try_cancel,
}
