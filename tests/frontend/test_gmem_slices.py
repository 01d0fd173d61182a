"""Equal slices of one global tensor, one per warp (cuDNN frost's linear-attention prologues).

`make_tensor(ws.iterator + c * words, make_layout((words,), stride=(1,)))` cuts the workspace in
pieces of `words` elements; each warp builds its descriptor array in its own piece through raw
pointer arithmetic from the slice's iterator. Global tensors are tracked whole, so the warps'
accesses used to meet in one region and a race between them was only "possible" (the whole
kernel inconclusive). A view at a multiple of its own extent is now a slice of the tensor, a
region of its own; an access of the tensor as a whole still touches every slice.
"""
from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models

SLICES = """\
import cutlass
import cutlass.cute as cute
import cutlass.experimental.primitives as nvvm

QW = 16


@cute.jit
def emit(words, n: cutlass.Int32):
    base = words.iterator.raw_ptr()
    lane = cutlass.Int32(cute.arch.thread_idx()[0]) % cutlass.Int32(32)
    for b in cutlass.range(lane, n, 32, unroll=1):
        dptr = base + b * cutlass.Int32(QW)
        for i in cutlass.range_constexpr(QW):
            w = (dptr + i).load()
            (dptr + i).store(w + cutlass.Int64(1))


@cute.kernel
def build(ws: cute.Tensor, flag: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    widx = tidx // 32
    words = n * cutlass.Int32(QW)
    a = cute.make_tensor(ws.iterator, cute.make_layout((words,), stride=(1,)))
    b = cute.make_tensor(ws.iterator + OFFSET_B, cute.make_layout((words,), stride=(1,)))
    if widx == 0:
        emit(a, n)
    if widx == 1:
        emit(b, n)
        WHOLE
        nvvm.atomicrmw(nvvm.AtomicOp.ADD, flag.iterator, cutlass.Int32(1), mem_order=nvvm.MemOrder.RELEASE,
                       syncscope=nvvm.MemScope.GPU)


@cute.jit
def launch(ws: cute.Tensor, flag: cute.Tensor, n: cutlass.Int32):
    build(ws, flag, n).launch(grid=(1, 1, 1), block=(64, 1, 1))
"""


def slices(offset: str, whole: str = "") -> str:
    return SLICES.replace("OFFSET_B", offset).replace("WHOLE", whole or "pass")


def check(src: str):
    return api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]


def gmem_regions(m, warp) -> set:
    return {op.region.name for p in m.processes if p.warp == warp for v in p.variants for op in ir.walk(v)
            if isinstance(op, ir.Access) and op.region.space == "gmem" and "ws" in op.region.name}


def test_views_at_multiples_of_their_extent_are_slices_of_their_own():
    [m] = build_models(slices("words"), "k.py", Settings())
    assert gmem_regions(m, 0) == {"global ws[slice 0]"}
    assert gmem_regions(m, 1) == {"global ws[slice 1]"}
    assert any(a.startswith("views of global tensor ws at multiples of their extent") for a in m.assumptions)


def test_warps_in_their_own_slices_verify(require_spin):
    for offset in ("words", "2 * words"):
        kr = check(slices(offset))
        assert kr.verdict == "verified", (offset, kr.reason)


def test_a_view_that_overlaps_another_is_no_slice(require_spin):
    # Offset n with extent 16 n: the second array starts inside the first.
    kr = check(slices("n"))
    assert kr.verdict != "verified"
    assert {f.code for f in kr.findings} == {"CS201"}


def test_pieces_of_different_extents_are_no_slices(require_spin):
    # `b` has extent words // 2 at offset words // 2: slice 1 of that size, which lies inside `a`
    # (slice 0 of size words). Pieces of two sizes may overlap: the tensor stays whole.
    src = slices("words // 2").replace("b = cute.make_tensor(ws.iterator + words // 2, cute.make_layout((words,)",
                                       "b = cute.make_tensor(ws.iterator + words // 2, cute.make_layout((words // 2,)")
    assert "make_layout((words // 2,)" in src
    [m] = build_models(src, "k.py", Settings())
    assert gmem_regions(m, 0) == gmem_regions(m, 1) == {"global ws"}
    kr = check(src)
    assert kr.verdict != "verified"


def test_pieces_of_a_view_are_no_slices_of_the_tensor():
    # A tile of the workspace may start anywhere in it: `tile + words` is no multiple of `words`
    # from the tensor's start, so the pieces of a view are not slices (the tensor stays whole).
    src = slices("words").replace(
        "    a = cute.make_tensor(ws.iterator,",
        "    tile = cute.local_tile(ws, (4096,), (cute.arch.block_idx()[0],))\n"
        "    a = cute.make_tensor(tile.iterator,").replace("ws.iterator + words", "tile.iterator + words")
    assert "tile.iterator + words" in src
    [m] = build_models(src, "k.py", Settings())
    assert gmem_regions(m, 0) == gmem_regions(m, 1) == {"global ws"}


def test_pieces_sized_by_a_ctas_own_data_are_no_slices():
    # `words` read from shared memory is one value per CTA, not per launch: two CTAs may cut the
    # workspace in pieces of different sizes, which overlap.
    src = slices("words").replace(
        "    words = n * cutlass.Int32(QW)\n",
        "    smem = cutlass.utils.SmemAllocator()\n"
        "    s_words = smem.allocate_tensor(cutlass.Int32, cute.make_layout(1))\n"
        "    words = s_words[0]\n")
    assert "words = s_words[0]" in src
    [m] = build_models(src, "k.py", Settings())
    assert gmem_regions(m, 0) == gmem_regions(m, 1) == {"global ws"}


def test_an_access_of_the_whole_tensor_meets_every_slice(require_spin):
    # Warp 1 also reads the workspace through the tensor itself, at an index that does not fold:
    # it may read warp 0's slice while warp 0 writes it.
    kr = check(slices("words", whole="x = ws[n + cutlass.Int32(3)]"))
    assert kr.verdict != "verified"
    assert {f.code for f in kr.findings} == {"CS201"}
