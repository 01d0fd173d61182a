"""Abstract values the interpreter computes while walking a kernel.

Python constants stay Python objects (int, bool, str, tuple, None). Everything else is one of
the small frozen dataclasses below. `Unknown` carries why a value could not be determined, so
an unmodeled item can say so.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from dataclasses import field as dc_field  # `Smem` has an attribute named `field`
from typing import Any, Optional

FULL_MASK = (1 << 32) - 1


@dataclass(frozen=True)
class Unknown:
    """A value the interpreter cannot determine.

    `key` is set only for a *CTA-uniform* value: a term (nested tuples) that computes it from
    immutable inputs every thread of the CTA sees alike (kernel arguments, host attributes,
    constants, and concrete values such as loop indices and block coordinates). Two evaluations
    with equal keys in one CTA have the same value, whichever warp makes them and whenever; a
    value derived from thread identity or per-thread data has no key (see docs/policies.md P14).
    """

    why: str = "runtime value"
    key: Any = None
    # A layout whose shape did not fully fold: its top-level mode sizes (None where unknown), so
    # that a buffer allocated with it can still tell which mode is the stage mode.
    dims: Any = field(default=None, compare=False, hash=False)
    # `cute.crd2idx(coord, layout)` that did not fold: the coordinate, so that `buf.iterator +`
    # it can still select the stage the coordinate names.
    coord: Any = field(default=None, compare=False, hash=False)
    # A vector a `load_ext(ptr, dtype=t, count=n)` returned: (t, n), so that storing it writes n
    # elements of type t (interp `_prim_access`).
    vector: Any = field(default=None, compare=False, hash=False)
    # A value that was a select on uniform conditions until its term grew past the size limit
    # (a phase advanced on one side of each of several branches): those conditions' branch keys,
    # so that a use needing the number (a parity, an index) can still make each a configuration
    # of its own, where the branches fold and the value is known (interp `select_index`).
    pending: Any = field(default=(), compare=False, hash=False)
    # A tensor that a uniform condition chose (`offsets = regs if const_expr(single) else
    # mOffsets`, set on one side of the branch): ("sel", condition, where it holds, where not), each
    # side a tensor or another such tree. A read through it is each side's read, selected on the
    # condition (interp `eval_Subscript`); everything else sees an unknown value.
    chosen: Any = field(default=None, hash=False)

    def __bool__(self):  # pragma: no cover - guard against accidental truthiness
        raise TypeError("Unknown has no truth value")


@dataclass(frozen=True)
class CtaGroupOp(Unknown):
    """A tcgen05 MMA op or tiled MMA, or a TMA load op, whose CTA group folded: `ctas` is 2 for
    cta_group::2 (a 2-CTA pair: the leader's MMA reads both CTAs' SMEM operands and writes both
    CTAs' accumulators; a 2-CTA TMA load completes its bytes on the pair leader's barrier), 1
    otherwise. Everything else about it stays opaque, as for any Unknown."""

    ctas: int = 1
    # Where the MMA's A operand comes from ("SMEM" / "TMEM"), when its op says so (`a_source=`, or
    # `make_trivial_tiled_mma`'s default): the `gemm_ptx` helpers branch on `op.a_src`.
    a_src: Optional[str] = None


@dataclass(frozen=True)
class PartialText(Unknown):
    """A string built from known text and parts that do not fold (an f-string's `{tag}` of a
    runtime value): `text` holds the known characters, each unknown part as TEXT_HOLE. To the
    interpreter it is an unknown like any other; only the inline-PTX reader looks at `text`, to
    find instructions whose mnemonics are known."""

    text: str = ""
    # Every whole text it may be, where each unknown part is a select of strings on uniform
    # conditions (`cvt = "cvt.rp..." if const_expr(e8m0) else "cvt.rn..."`); () when not known.
    options: tuple = ()


TEXT_HOLE = "\x00"


@dataclass(frozen=True)
class LaneVal:
    """A value that differs per lane of the current warp: `vals[lane]`."""

    vals: tuple

    @staticmethod
    def lanes() -> "LaneVal":
        return LaneVal(tuple(range(32)))

    def uniform(self):
        first = self.vals[0]
        return first if all(v == first for v in self.vals) else None


@dataclass(frozen=True)
class Smem:
    """A shared-memory object: an mbarrier array, a buffer, a pointer into one, or a view.

    `stage` selects one stage of a staged buffer; `offset` is pointer arithmetic in elements.
    `cta` is the CTA whose shared memory it is (a DSMEM-mapped pointer names the peer)."""

    alloc: str  # unique allocation key (never reaches Promela)
    label: str  # name for messages
    cta: int
    offset: int = 0
    stage: Optional[int] = None
    stages: Optional[int] = None
    nbytes: Optional[int] = None  # bytes of one stage (None when unknown)
    remote: bool = False
    label_base: int = 0  # offset that index 0 of `label` starts at (a pipeline's empty array)
    part: Optional[str] = None  # per-thread partition view: the partition call site (see ir.Access.part)
    # Tensor memory (sm100) rather than shared memory: the TMEM the CTA allocated, viewed through
    # the pointer `retrieve_ptr` returns. `stage` is then the accumulator stage (see interp
    # `_tmem_subscript`); TMEM_ALL_STAGES names every stage at once (dealloc).
    tmem: bool = False
    # A buffer laid out (..., STAGES, N): its last mode is not the stage (per-warp slices, say);
    # slicing that mode with an index leaves a view staged on its last mode (see interp.access).
    inner_stages: Optional[int] = None
    flat: bool = False  # allocated with a rank-1 compact layout: an integer index is the element
    # Allocated with an injective layout of this many modes (2 or more): a full coordinate names
    # one element, so two coordinates whose last components differ name different elements
    # (element blocks of the last mode, see interp `access`). 0 for views and pointers.
    coord_rank: int = 0
    # Elements [32*block, 32*block + 32) of a flat buffer (ELEMENT_BLOCK_REST: the elements no
    # block access names); set for loads/stores at per-lane indices (see frontend.split_blocks).
    block: Optional[int] = None
    # The elements of `block` a per-lane load/store names (interp `access`), and after
    # frontend.split_blocks the atom of the block this access stands for: the elements that
    # exactly the same accesses name (`acc[warp]` and `acc[n_warps]` are different atoms of block 0).
    elems: Optional[tuple] = None
    atom: Optional[tuple] = None
    # A field of a `@cute.struct` allocation (`storage.scheduler`): its attributes other than a
    # tensor's are the fields of a nested struct (`storage.scheduler.tile_info_mbar`).
    field: bool = False
    # A view selected with an index that did not fold (`sD[(None, None, None, d_buffer)]` with
    # `d_buffer` unknown): taken as the whole buffer, so every access through it, the copies it
    # feeds included, is inexact (ir.Access.exact, policy P16). Not part of its identity.
    inexact: bool = dc_field(default=False, compare=False)
    # How a part of one stage was selected: ("crd", coords) for a view taken at constant
    # coordinates besides the stage (`sdO[None, 1, None, stage]` -> (None, 1, None)), ("offset", k)
    # for a pointer `buf.iterator + k`. Regions ignore it (a stage is one region), so two copies
    # into different parts share a region; build_models marks such accesses inexact (P16).
    sub: Optional[tuple] = None
    # An array declared as `STAGES * elements` (`cutlass.Array(dt, STAGES * n, space=smem)`, cuDNN
    # frost): the elements of one stage. Pointer arithmetic from the array's start selects the
    # stage its offset falls in (interp `binop`); the array itself, no stage, is every stage.
    stage_elems: Optional[int] = None
    # A view staged on its *first* mode (`make_tensor(raw.iterator, (STAGES, rows, cols):(R*C, C, 1))`
    # over a rank-1 allocation, cuDNN's causal conv1d): the first mode's stride in elements, which
    # covers every other mode, so stage i is elements [i * stride, (i + 1) * stride).
    stage_first: Optional[int] = None
    # An MMA's operand view of the buffer (`tiled_mma.make_fragment_A(sA)`): shaped (MMA, MMA_M,
    # MMA_K, STAGE) whatever the buffer's layout, so its last index selects the stage even when
    # the buffer's stage count did not fold (a host layout, tcgen05 GEMMs' `a_layout.outer`).
    mma_operand: bool = dc_field(default=False, compare=False)
    # The element type it was allocated with (`allocate_tensor(dtype, ...)`), as evaluated: a
    # vector load/store of that type through `buf.iterator + off` names elements off.. (interp
    # `_prim_access`). None when not known.
    dtype: Any = dc_field(default=None, compare=False)

    def at(self, **kw) -> "Smem":
        return replace(self, **kw)


TMEM_ALL_STAGES = -1
TMEM_UNKNOWN_OFFSET = -(1 << 40)  # `tmem_ptr + x` with x not folded: somewhere in the allocation


@dataclass(frozen=True)
class Rmem:
    """A register tensor (`cute.make_rmem_tensor` / `make_fragment`), keyed by its creation site.
    Tracked so that a read of the registers a tcgen05.ld filled can be recognised, and, for a
    tensor of one element, so that the value a thread stored in it is the value it reads back
    (`Interp.reg_values`)."""

    key: str
    single: bool = False  # its shape folded to one element


@dataclass(frozen=True)
class Gmem:
    """A global-memory tensor or pointer (a kernel argument or a view of one)."""

    name: str
    offset: int = 0
    is_ptr: bool = False
    # Moved by an offset that did not fold (`desc_base + b * QWORDS` with `b` a runtime loop
    # index): global tensors are tracked whole, so a race through it is possible only (P16).
    inexact: bool = False
    # A kernel argument annotated `Optional[cute.Tensor]` that the launch may pass as None:
    # `x is None` is then a choice of the build, not False (interp `compare`).
    optional: bool = dc_field(default=False, compare=False)
    # On the target of an access only (interp `access`): `mFlags[3]` on a kernel argument names
    # element 3, its own region (frontend `split_gmem_elements`); an access at known per-lane
    # indices (`mData[tidx]`) names `index_set`, which tells it apart from those elements.
    elem: Optional[int] = None
    index_set: Optional[frozenset] = dc_field(default=None, compare=False)
    # `base + c * n` with `n` a uniform term (key) that did not fold: (n, c), kept so that a view
    # of extent n made on it (`make_tensor(ptr, make_layout((n,), stride=(1,)))`) is known to be
    # slice c of the tensor (cuDNN frost's per-warp descriptor arrays in one workspace).
    scaled_offset: Optional[tuple] = dc_field(default=None, compare=False)
    # Elements [c * n, (c + 1) * n) of the tensor, as (n, c): accesses through the view and the
    # pointers derived from it stay in it, so different slices are different regions (P16).
    slice: Optional[tuple] = None
    # A view of the tensor (`local_tile`, a partition, `make_tensor` on its iterator): it may start
    # anywhere in the tensor, so an offset from it is not an offset from the tensor's start and
    # no slice is made on it.
    view: bool = dc_field(default=False, compare=False)


@dataclass(frozen=True)
class Storage:
    """The result of `SmemAllocator().allocate(SharedStorage)`, or a `@cute.struct` class applied
    to raw shared memory (`view`). Views of one allocation through different structs overlap
    (a kernel reuses the mainloop's buffers for its epilogue), and their offsets are not folded,
    so every field of a view is the whole allocation: one region, never a missed conflict."""

    key: str
    cta: int
    view: bool = False
    label: str = "storage"  # what messages call the allocation (the fields of a view)


@dataclass(frozen=True)
class Allocator:
    key: str
    cta: int


@dataclass(frozen=True)
class TmaAtom:
    name: str
    ctas: int = 1  # 2: a cta_group::2 load (its bytes complete on the pair leader's barrier)


class TmaInfo(tuple):
    """`make_tiled_tma_atom_A/B(...)`: a `cpasync.TmaInfo`, which unpacks as (atom, tma_tensor) and
    has `.atom` and `.tma_tensor`."""


@dataclass(frozen=True)
class SmemDescriptor(Unknown):
    """An integer computed from a shared-memory buffer's address by bit arithmetic: the start
    field of a tcgen05 / wgmma SMEM matrix descriptor (`(ptr.toint() & 0x3FFFF) >> 4 | base`, the
    `gemm_ptx` helpers of flash-attn, quack and cuDNN). Inline PTX that issues an MMA on it reads
    `buf`; anywhere else it is a number the interpreter does not know, as any Unknown."""

    buf: Any = None  # the Smem


@dataclass(frozen=True)
class CopyKind:
    """A copy operation, copy atom, tiled copy or thread slice of one whose instruction matters for
    synchronization: "cpasync" (Ampere `cp.async`, CopyG2SOp)."""

    kind: str


@dataclass(frozen=True)
class WarpMmaOp:
    """`cute.nvgpu.warp.Mma*Op(..., (M, N, K))`: a warp-level MMA instruction of M rows."""

    rows: int


@dataclass(frozen=True)
class WarpRowTiling:
    """A tiled MMA of warp-level MMAs whose `warps` warps tile M only (`atom_layout_mnk` (W, 1,
    1), any M permutation W * rows): warp w computes rows w * rows .. w * rows + rows - 1 of each
    block of W * rows rows. Its A- and C-operand tiled copies (`make_tiled_copy_A/C`, as a
    `WarpRowCopy`) give each warp those rows too."""

    warps: int
    rows: int


@dataclass(frozen=True)
class WarpRowCopy:
    """`make_tiled_copy_A/C(atom, tiled_mma)` of a `WarpRowTiling`, or a thread slice of one: its
    per-thread partitions of a buffer are the calling warp's rows of it."""

    tiling: WarpRowTiling


@dataclass(frozen=True)
class TmemAllocatorObj:
    """`utils.TmemAllocator(holder, barrier_for_retrieve=nb, allocator_warp_id=w)`: the allocator
    warp writes the TMEM address into `holder`; the others read it after `barrier`."""

    holder: Any  # Smem or Unknown
    barrier: Any  # NamedBarrierObj or Unknown
    warp: Any
    two_cta: Any
    dealloc_bar: Any = None  # 2-CTA: the mbarrier the pair's allocator warps meet on before freeing


@dataclass(frozen=True)
class TensorMapManagerObj:
    """`utils.TensorMapManager(mode, bytes)`: one warp writes TMA descriptors (tensor maps) into
    shared or global memory and copies them out; `smem` is True in SMEM update mode, False in
    GMEM mode, None when the mode did not fold."""

    smem: Any


@dataclass(frozen=True)
class NamedBarrierObj:
    """`pipeline.NamedBarrier(barrier_id=, num_threads=)`, or an object of a package subclass of it
    (`cls`, its ClassRef): the subclass's own methods are interpreted, the others are the library's."""

    barrier_id: Any
    threads: Any
    cls: Any = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class UnresolvedSyncObject(Unknown):
    """An object of a package class deriving a `cutlass.pipeline` class that the interpreter could
    not build: a synchronization method called on it is unmodeled, never dropped."""

    cls_name: str = ""


@dataclass(frozen=True)
class FlagRead:
    """The value of a (possibly acquiring) load of a GMEM flag; used to recognise spins."""

    flag: Gmem
    sem: Optional[str]
    scope: Optional[str]


@dataclass(frozen=True)
class TryWaitResult:
    bar: Smem
    parity: object  # 0 / 1, or a select of numbers on uniform conditions (waited on per side)


@dataclass(frozen=True)
class FuncRef:
    """A helper function or method (inlined at calls): defined in the analyzed file, or in a
    sibling module of its package (`module` is then that module's ModuleInfo). `bound` is the
    receiver of a method of a package class called on an object (a pipeline of a subclass)."""

    qualname: str
    node: Any = field(compare=False, hash=False)
    bound_self: bool = False
    module: Any = field(default=None, compare=False, hash=False)
    bound: Any = field(default=None, compare=False, hash=False)
    owner: Any = field(default=None, compare=False, hash=False)  # the ClassRef a method came from
    # A function defined inside another one (a helper factory's closures, a kernel's local
    # helper): the interp `Frame` of the call it was defined in, whose names it reads.
    closure: Any = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class ClassRef:
    """A class defined in the analyzed package. `library_base` names the `cutlass.pipeline` class
    it derives from (through its package bases), if any."""

    qualname: str
    node: Any = field(compare=False, hash=False)
    module: Any = field(compare=False, hash=False)
    bases: tuple = field(default=(), compare=False, hash=False)  # ClassRefs of package bases, in MRO order
    library_base: Optional[str] = None


@dataclass(frozen=True)
class PartialRef:
    """`functools.partial(f, *args, **kwargs)`: called later with the bound arguments first."""

    func: Any
    args: tuple = ()
    kwargs: tuple = ()  # (name, value) pairs


@dataclass(frozen=True)
class LambdaRef:
    """A `lambda`: its body is evaluated in the environment it was created in."""

    node: Any = field(compare=False, hash=False)
    env: Any = field(compare=False, hash=False)
    module: Any = field(default=None, compare=False, hash=False)


@dataclass
class Record:
    """An object of a package class built in the kernel: a `@dataclass` / NamedTuple of
    parameters (barrier pointers among them), or a class whose `__init__` we interpret."""

    cls: Any
    attrs: dict


@dataclass(frozen=True)
class LibraryCreate:
    """`Sub.create` of a package subclass that inherits the library's `create`."""

    cls: Any


@dataclass(frozen=True)
class SuperRef:
    """`super()` inside a method of a pipeline subclass: the library behaviour of the object."""

    obj: Any


@dataclass(frozen=True)
class ModuleGlobals:
    """`globals()` of a module. Template modules read the parameters their generator injects with
    `globals().get("PARAMS", Default())` (cuDNN frost): statically that is the default."""

    module: Any = field(compare=False, hash=False)


@dataclass(frozen=True)
class ModuleRef:
    """A name bound to an imported module or object, by its fully qualified name."""

    qualname: str


MAX_MASK_LAYOUT = 1024  # layouts larger than this get no multicast mask (never enumerated)


@dataclass(frozen=True)
class Layout:
    """A layout whose shape folded to Python ints."""

    shape: tuple
    compact: bool = True  # column-major (no explicit stride): the only case coordinates are computed for
    strides: Optional[tuple] = None  # explicit strides that folded, one per mode of a flat shape

    def size(self) -> int:
        n = 1
        for s in _flatten(self.shape):
            n *= s
        return n

    def mode_sizes(self) -> Optional[tuple]:
        """Sizes of the top-level modes (a nested mode counts as its product), None when not compact."""
        if not self.compact:
            return None
        modes = self.shape if isinstance(self.shape, tuple) else (self.shape,)
        return tuple(Layout(m).size() if isinstance(m, tuple) else m for m in modes)

    def coord(self, index: int) -> Optional[tuple]:
        """The top-level coordinate of `index` (column-major), e.g. a CTA rank -> (v, m, n, l)."""
        sizes = self.mode_sizes()
        if sizes is None or any(n <= 0 for n in sizes):  # an empty mode (a mutant's `(0, 1, 1)`)
            return None
        out = []
        for n in sizes:
            out.append(index % n)
            index //= n
        return tuple(out)

    def image_mask(self, coord: tuple, mode: int) -> Optional[int]:
        """`make_layout_image_mask` / `create_tma_multicast_mask`: the indices whose coordinate equals
        `coord` in every mode but `mode` (the CTAs a multicast along `mode` reaches), as a bit mask."""
        sizes = self.mode_sizes()
        if sizes is None or not 0 <= mode < len(sizes) or self.size() > MAX_MASK_LAYOUT:
            return None  # a cluster has at most 16 CTAs; a larger layout is no cluster (unknown mask)
        mask = 0
        for i in range(self.size()):
            c = self.coord(i)
            if all(c[k] == coord[k] for k in range(len(sizes)) if k != mode):
                mask |= 1 << i
        return mask


@dataclass(frozen=True)
class DType:
    name: str
    bits: int


@dataclass(frozen=True)
class ElectCtx:
    """The context manager returned by `elect_one()`."""


@dataclass
class SelfObj:
    attrs: dict
    # Stage-count attributes host code assigned from values that do not fold, which took the
    # default stage count right there (so that what the host derives from them agrees).
    stage_defaults: set = field(default_factory=set)


def _flatten(t):
    if isinstance(t, (tuple, list)):
        for x in t:
            yield from _flatten(x)
    else:
        yield t


DTYPE_BITS = {
    "Float16": 16, "BFloat16": 16, "Float32": 32, "Float64": 64, "Int8": 8, "Uint8": 8,
    "Int16": 16, "Uint16": 16, "Int32": 32, "Uint32": 32, "Int64": 64, "Uint64": 64,
    "Float8E4M3FN": 8, "Float8E5M2": 8, "TFloat32": 32, "Boolean": 8,
}


def is_known(v) -> bool:
    return not isinstance(v, Unknown)


def is_concrete_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) or isinstance(v, bool)
