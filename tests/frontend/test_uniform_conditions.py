"""CTA-uniform runtime conditions (policy P14): one shared value per condition and CTA.

A runtime condition that does not depend on the thread (kernel arguments, host attributes,
constants, loop indices) is numbered by its value, so every warp of a CTA takes the same side;
a condition that may differ between warps or lanes stays an independent choice per warp.
"""
import textwrap

from cutespin import api, ir
from cutespin.config import Settings
from cutespin.frontend import build_models
from tests.kernels import kernel_source

TEMPLATE = """\
import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T


@cute.jit
def tiles_left(n, k):
    return cute.arch.fmax(n - k, 0)


@cute.jit
def tiles_left_at(n, k):
    return cute.arch.fmax(n - k, 0) + cute.arch.clock()


@cute.jit
def lane_from_ptx(n, base):
    lane = llvm.inline_asm(T.i32(), [], "mov.u32 $0, %laneid;", "=r")
    return cute.arch.fmax(n - lane, base)


@cute.jit
def tiles_left_for_thread(n, base):
    tidx, _, _ = cute.arch.thread_idx()
    return cute.arch.fmax(n - tidx, base)


class K:
    def __init__(self, flag):
        self.flag = flag
        self.threads = 64

    @cute.jit
    def __call__(self, mA: cute.Tensor, n: cutlass.Int32, scale: cutlass.Float32):
        self.kernel(mA, n, scale).launch(grid=(1, 1, 1), block=(self.threads, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor, n: cutlass.Int32, scale: cutlass.Float32):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
{body}
"""


def model(body: str):
    src = TEMPLATE.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))
    ms = build_models(src, "k.py", Settings())
    assert len(ms) == 1
    return ms[0]


def choices(m, warp, variant=-1):
    p = next(p for p in m.processes if p.warp == warp)
    return [op for op in ir.walk(p.variants[variant]) if isinstance(op, ir.Choice)]


def shared_ids(m, warp, variant=-1):
    return [c.shared for c in choices(m, warp, variant)]


def test_condition_on_a_kernel_argument_is_shared_by_every_warp():
    m = model("""\
        if scale != cutlass.Float32(0.0):
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == shared_ids(m, 1) == [0]
    assert len(m.shared_conditions) == 1


def test_same_value_at_two_sites_is_one_shared_condition():
    m = model("""\
        if n > 4:
            cute.arch.sync_threads()
        if n > 4:
            cute.arch.sync_threads()
        if n > 5:
            cute.arch.sync_threads()
        """)
    a, b, c = shared_ids(m, 0)
    assert a == b != c


def test_negated_condition_shares_the_value_with_sides_swapped():
    m = model("""\
        if n > 4:
            sBuf[lane] = 1.0
        if not (n > 4):
            cute.arch.sync_threads()
        """)
    first, second = choices(m, 0)
    assert first.shared == second.shared is not None
    assert not first.swapped and second.swapped  # its first side is the source's `else`
    assert [type(o).__name__ for o in second.alternatives[0]] == []
    assert [type(o).__name__ for o in second.alternatives[1]] == ["NamedBarrier"]


def test_host_attribute_set_by_the_constructor_is_uniform():
    m = model("""\
        if self.flag:
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == shared_ids(m, 1) != [None]


def test_condition_that_involves_the_warp_index_differs_between_warps():
    m = model("""\
        if warp_idx * 32 < n:
            cute.arch.sync_threads()
        """)
    (w0,), (w1,) = shared_ids(m, 0), shared_ids(m, 1)
    assert w0 is not None and w1 is not None and w0 != w1


def test_condition_on_loaded_data_stays_independent_per_warp():
    # The kernel writes mA, so another thread may change it between two warps' loads; each
    # thread reads its own element of sBuf (one element every lane names alike would be one value
    # for the CTA: tests/frontend/test_broadcast_loads.py).
    m = model("""\
        if mA[0] > 0.0:
            cute.arch.sync_threads()
        if sBuf[tidx] > 0.0:
            cute.arch.sync_threads()
        mA[tidx] = 1.0
        """)
    assert shared_ids(m, 0) == shared_ids(m, 1) == [None, None]


def test_a_kernel_input_read_at_a_uniform_index_is_uniform():
    # Nothing in the kernel writes mA: every thread reads the same mA[n].
    m = model("""\
        if mA[n] > 0.0:
            cute.arch.sync_threads()
        if mA[tidx] > 0.0:
            cute.arch.sync_threads()
        """)
    first, second = shared_ids(m, 0)
    assert first is not None and shared_ids(m, 1)[0] == first
    assert second is None  # a per-thread element


def test_condition_on_the_thread_index_keeps_lane_masks_and_no_shared_value():
    m = model("""\
        if tidx < n:
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == [None]


def test_unknown_function_of_a_uniform_value_is_not_uniform():
    m = model("""\
        if cute.arch.clock() > n:
            cute.arch.sync_threads()
        if cute.ceil_div(n, 4) > 2:
            cute.arch.sync_threads()
        """)
    clock, ceil = shared_ids(m, 0)
    assert clock is None and ceil is not None


def test_uniform_condition_in_a_loop_is_a_distinct_value_per_iteration():
    m = model("""\
        for i in cutlass.range(n):
            if (i + self.flag) % 2 == 0:
                cute.arch.sync_threads()
        """)
    # The longest trip-count configuration: one choice per iteration, numbered per iteration.
    ids0, ids1 = shared_ids(m, 0), shared_ids(m, 1)
    assert len(ids0) >= 2 and None not in ids0
    assert len(set(ids0)) == len(ids0)
    assert ids0 == ids1


def test_const_expr_of_an_unknown_value_is_one_value_per_site():
    # `const_expr` is decided at compile time: every warp takes the same side, even when the
    # value itself has no uniform term (a comparison inside a container test).
    m = model("""\
        if cutlass.const_expr(self.arch // 10 in [10, 11] and mA[0] > 0.0):
            cute.arch.sync_threads()
        """)
    (a,), (b,) = shared_ids(m, 0), shared_ids(m, 1)
    assert a is not None and a == b


def test_work_tile_coordinates_and_tensor_shapes_are_uniform():
    m = model("""\
        sched = cutlass.utils.StaticPersistentTileScheduler.create(mA, cute.arch.block_idx(), cute.arch.grid_dim())
        work = sched.initial_work_tile_info()
        m_block, head, batch, _ = work.tile_idx
        if m_block == 0 and batch < mA.shape[0]:
            cute.arch.sync_threads()
        work = sched.get_current_work()
        if work.is_valid_tile:
            cute.arch.sync_threads()
        """)
    first, second = shared_ids(m, 0)
    assert shared_ids(m, 1) == [first, second] and None not in (first, second)
    # A new call is a new tile: its validity is a new value.
    assert first != second


def test_a_runtime_select_of_uniform_values_is_uniform():
    m = model("""\
        k = n if self.flag else 4
        if k > 2:
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == shared_ids(m, 1) != [None]


def test_a_uniform_condition_is_known_inside_its_own_branch():
    # `if n > 4:` nested in `if n > 4:` takes the outer side: no inner choice, and the count
    # the inner branch updates stays known (a parity computed from it folds).
    m = model("""\
        k = 0
        if n > 4:
            if n > 4:
                k = 1
            if not (n > 4):
                k = 2
            if k == 1:
                cute.arch.sync_threads()
        """)
    (outer,) = choices(m, 0)
    inner = [op for op in ir.walk(outer.alternatives[0]) if isinstance(op, ir.Choice)]
    assert inner == []
    assert [type(op).__name__ for op in outer.alternatives[0]] == ["NamedBarrier"]


def test_a_uniform_while_condition_holds_in_its_body():
    m = model("""\
        k = 0
        while n > 4:
            if n > 4:
                k = k + 1
            if k > 0:
                cute.arch.sync_threads()
        """)
    assert choices(m, 0) == []
    assert m.unmodeled == []


def test_values_set_on_the_sides_of_a_uniform_condition_stay_uniform():
    m = model("""\
        if n > 4:
            k = n
        else:
            k = 7
        if k == 7:
            cute.arch.sync_threads()
        """)
    # The first `if` only assigns (no choice in the model); the second is one shared value.
    assert shared_ids(m, 0) == shared_ids(m, 1) != [None]


def test_values_set_under_a_condition_that_names_the_warp_follow_each_warps_condition():
    # Warp 0 tests `0 < n`, warp 1 `32 < n`: different values, so `k == 7` is too.
    m = model("""\
        if warp_idx * 32 < n:
            k = n
        else:
            k = 7
        if k == 7:
            cute.arch.sync_threads()
        """)
    (w0,), (w1,) = shared_ids(m, 0), shared_ids(m, 1)
    assert None not in (w0, w1) and w0 != w1


def _uniform_model(body: str, extra_class: str = ""):
    from tests.kernels import kernel_source
    src = kernel_source(body, threads=64, extra_class=extra_class)
    ms = build_models(src, "k.py", Settings())
    return ms[0]


def test_an_attribute_only_a_host_setup_method_assigns_is_uniform():
    m = _uniform_model("""\
        if self.split_at > 0:
            cute.arch.sync_threads()
        """, extra_class="""\
        def _setup_attributes(self, n):
            self.split_at = n // 2
        """)
    assert shared_ids(m, 0) == shared_ids(m, 1) != [None]


def test_an_attribute_a_device_helper_assigns_is_not_made_uniform():
    # `_device_step` is reached from the kernel: what it assigns may differ per thread.
    m = _uniform_model("""\
        self._device_step()
        if self.split_at > 0:
            cute.arch.sync_threads()
        """, extra_class="""\
        @cute.jit
        def _device_step(self):
            self.split_at = cute.arch.thread_idx()[0] - mystery()
        """)
    assert shared_ids(m, 0) == shared_ids(m, 1) == [None]


def test_the_grid_size_is_uniform():
    m = _uniform_model("""\
        gdim, _, _ = cute.arch.grid_dim()
        bidx, _, _ = cute.arch.block_idx()
        if bidx + gdim < mA.shape[0]:
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == shared_ids(m, 1) != [None]


def test_a_tensor_resliced_on_one_side_of_a_uniform_branch_keeps_uniform_shapes():
    # quack's RMSNorm backward: `if const_expr(self.per_head): mX = mX[None, bidz, None]`. The
    # tensor is a select of two uniform views afterwards, so `mX.shape[0]` is still uniform.
    m = model("""\
        _, _, bidz = cute.arch.block_idx()
        if cutlass.const_expr(self.flag):
            mA = mA[None, bidz]
        if mA.shape[0] > n:
            cute.arch.sync_threads()
        """)
    first, second = shared_ids(m, 0), shared_ids(m, 1)
    assert first == second and len(first) == 2 and None not in first


def test_pair_leader_test_on_a_tiled_mma_argument_holds_in_a_one_cta_cluster():
    # `bidx % cute.size(tiled_mma.thr_id.shape) == 0` with a tiled MMA whose CTA group is chosen
    # on the host: in the modeled 1-CTA cluster the MMA is a 1-CTA one, so every CTA leads.
    src = kernel_source("""\
bidx, _, _ = cute.arch.block_idx()
is_leader_cta = bidx % cute.size(tiled_mma.thr_id.shape) == 0
if is_leader_cta:
    cute.arch.sync_threads()
""").replace("def kernel(self, mA: cute.Tensor)", "def kernel(self, mA: cute.Tensor, tiled_mma: cute.TiledMma)")
    src = src.replace("self.kernel(mA).launch(", "self.kernel(mA, make_tiled_mma_on_host()).launch(")
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled
    assert any("the CTA group of tiled_mma is not known: a 1-CTA MMA" in a for a in m.assumptions)
    ops = list(ir.walk(m.processes[0].variants[-1]))
    assert not [o for o in ops if isinstance(o, ir.Choice)]
    assert [o for o in ops if isinstance(o, ir.NamedBarrier)]


def test_sizes_of_one_uniform_value_are_one_condition_in_every_warp():
    src = kernel_source("""\
n = cute.size(mA.shape, mode=[1])
if n > 4:
    cute.arch.sync_threads()
""")
    m = build_models(src, "k.py", Settings())[0]
    choices = [o for p in m.processes for o in ir.walk(p.variants[-1]) if isinstance(o, ir.Choice)]
    assert len(choices) == 2 and all(c.shared is not None for c in choices)
    assert len({c.shared for c in choices}) == 1


def test_host_attributes_the_launcher_recomputes_keep_their_uniform_term():
    # The launcher calls the setup method again; what it recomputes from values that do not fold
    # is still the host value _fold_self found (a uniform term), not a fresh unknown.
    src = kernel_source("""\
for i in cutlass.range_constexpr(2):
    if i == self.release_at:
        cute.arch.sync_threads()
""", extra_class='''
def _setup(self):
    self.tile = (tile_from_host(), 4)
    self.release_at = self.tile[0] // 64
''')
    src = src.replace("        self.kernel(mA).launch(", "        self._setup()\n        self.kernel(mA).launch(")
    m = build_models(src, "k.py", Settings())[0]
    choices = [o for p in m.processes for o in ir.walk(p.variants[-1]) if isinstance(o, ir.Choice)]
    assert choices and all(c.shared is not None or c.enum is not None for c in choices)


def test_only_host_terms_survive_the_launchers_recomputation():
    # A number `_fold_self` folded is not put back over the launcher's unknown: the launcher may
    # have derived other attributes (a buffer's stage count) from the value it recomputed. Putting
    # it back made the CUTLASS Hopper persistent GEMM's TMA store ring longer than its buffer (a
    # false race).
    from cutespin.frontend import _keep_host_terms
    from cutespin.frontend.values import SelfObj, Unknown
    self_obj = SelfObj({"epi_stage": Unknown("recomputed"), "release_at": Unknown("recomputed")})
    _keep_host_terms(self_obj, {"epi_stage": 4, "release_at": Unknown("host", key=("self", 1, "release_at"))})
    assert isinstance(self_obj.attrs["epi_stage"], Unknown) and self_obj.attrs["epi_stage"].key is None
    assert self_obj.attrs["release_at"].key == ("self", 1, "release_at")


def test_a_package_helper_of_uniform_arguments_is_one_value_at_every_call_site():
    # flash-attn's `has_work = get_trip_count(coord, seqlen) > 0`, computed by each role at its
    # own call site: the helper's result is a function of uniform values only (P14).
    m = model("""\
        if warp_idx == 0:
            if tiles_left(n, 3) > 0:
                cute.arch.sync_threads()
        else:
            if tiles_left(n, 3) > 0:
                cute.arch.sync_threads()
            if tiles_left(n, 4) > 0:
                cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == [0]
    assert shared_ids(m, 1) == [0, 1]


def test_a_helper_reading_the_clock_or_the_thread_index_is_not_uniform():
    m = model("""\
        if tiles_left_at(n, 3) > 0:
            cute.arch.sync_threads()
        if tiles_left_for_thread(n, 0) > 0:
            cute.arch.sync_threads()
        if lane_from_ptx(n, 0) > 0:
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == [None, None, None]


def test_a_package_object_argument_is_named_by_its_class_without_printing_its_syntax_tree():
    # flash-attn passes `SeqlenInfo` records to its helpers: the record's term names the class by
    # its qualified name. Printing the ClassRef (its whole class body) took minutes per kernel.
    from cutespin.frontend import interp as I
    from cutespin.frontend.values import ClassRef, Record

    class Unprintable:
        def __repr__(self):
            raise AssertionError("the class's syntax tree was printed")

    rec = Record(ClassRef("pkg.SeqlenInfo", Unprintable(), None), {"n": I.Unknown("n", key=I._leaf("arg", "n"))})
    same = Record(ClassRef("pkg.SeqlenInfo", Unprintable(), None), {"n": I.Unknown("n", key=I._leaf("arg", "n"))})
    other = Record(ClassRef("pkg.BlockInfo", Unprintable(), None), {"n": I.Unknown("n", key=I._leaf("arg", "n"))})
    assert I._arg_term(rec) == I._arg_term(same) != I._arg_term(other)


def test_a_one_element_register_reads_back_the_uniform_value_stored_in_it():
    # cuDNN's MoE GEMMs: `offsets = make_rmem_tensor((1,), Int32); offsets[0] = size(mA.shape[0])`.
    m = model("""\
        total = cute.make_rmem_tensor((1,), cutlass.Int32)
        total[0] = cutlass.Int32(cute.size(mA.shape[0]))
        if total[0] <= 0:
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == shared_ids(m, 1) != [None]


def test_a_one_element_register_read_at_an_index_that_does_not_fold_is_its_one_element():
    # cuDNN's one-group quant GEMM reads `total_token = padded_offsets[self.expert_cnt - 1]` from
    # the one-element register: read as a view, the comparison had no term, so warps took
    # different sides of `if total_token <= 0: exit()` (a false deadlock at a named barrier).
    m = model("""\
        total = cute.make_rmem_tensor((1,), cutlass.Int32)
        total[0] = cutlass.Int32(cute.size(mA.shape[0]))
        if total[self.flag - 1] <= 0:
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == shared_ids(m, 1) != [None]


def test_a_register_value_stored_per_thread_or_overwritten_elsewhere_is_not_uniform():
    m = model("""\
        per_thread = cute.make_rmem_tensor((1,), cutlass.Int32)
        per_thread[0] = mA[tidx]
        if per_thread[0] <= 0:
            cute.arch.sync_threads()
        copied = cute.make_rmem_tensor((1,), cutlass.Int32)
        copied[0] = n
        cute.autovec_copy(sBuf[None], copied)
        if copied[0] <= 0:
            cute.arch.sync_threads()
        wide = cute.make_rmem_tensor((4,), cutlass.Int32)
        wide[0] = n
        if wide[0] <= 0:
            cute.arch.sync_threads()
        elected = cute.make_rmem_tensor((1,), cutlass.Int32)
        elected[0] = mA[tidx]
        with cute.arch.elect_one():
            elected[0] = n  # one lane only: the others keep their loaded value
        if elected[0] <= 0:
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == shared_ids(m, 1) == [None, None, None, None]


def test_a_register_value_stored_on_both_sides_of_a_per_warp_branch_is_not_uniform():
    m = model("""\
        r = cute.make_rmem_tensor((1,), cutlass.Int32)
        r[0] = n
        if mA[tidx] > 0.0:
            r[0] = n + 1
        if r[0] <= 0:
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0)[-1] is None


CHOSEN_OFFSETS = """\
offsets = mA
if cutlass.const_expr(self.flag):
    r = cute.make_rmem_tensor((1,), cutlass.Int32)
    r[0] = STORED
    offsets = r
total = offsets[self.threads - 1]
if total <= 0:
    cute.arch.sync_threads()
"""


def test_a_compile_time_choice_between_an_input_and_a_register_copy_reads_each_sides_element():
    # `padded_offsets = runtime_padded_offsets` under `const_expr(self.flag)` (cuDNN's MoE GEMMs,
    # whose other build options leave no room for a configuration per value): the read is the
    # input's element where the flag is off and the register's where it is on, a select of the
    # two, the same in every warp, in one configuration.
    m = model(CHOSEN_OFFSETS.replace("STORED", "cutlass.Int32(cute.size(mA.shape[0]))"))
    assert len(m.configs) == 1
    assert shared_ids(m, 0) == shared_ids(m, 1) != [None]


def test_a_chosen_register_holding_a_per_thread_value_is_not_uniform():
    m = model(CHOSEN_OFFSETS.replace("STORED", "mA[tidx]"))
    # (The read's own accesses follow the flag's branch; the branch on `total` is each warp's own.)
    assert shared_ids(m, 0)[-1] is shared_ids(m, 1)[-1] is None


def test_two_register_tensors_made_at_one_site_keep_their_own_values():
    # One creation site run twice makes two tensors: the second store must not change the first.
    m = model("""\
        regs = ()
        for i in cutlass.range_constexpr(2):
            r = cute.make_rmem_tensor((1,), cutlass.Int32)
            r[0] = n if i == 0 else mA[tidx]
            regs = regs + (r,)
        if regs[0][0] <= 0:
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == shared_ids(m, 1) != [None]  # regs[0] holds `n`, not the loaded value


def test_size_of_a_partition_that_does_not_fold_is_the_same_in_every_warp():
    # flash-attn-4's MLA dQ/dQv epilogue: `subtile_idx < cute.size(tTR_tAcc.shape, mode=[3])` on a
    # per-thread partition. A partition's shape is the same in every thread, so all warps take
    # the same side (as a choice per warp, one warp skipped the epilogue barrier: a false deadlock).
    m = model("""\
        thr = cute.make_tiled_copy_tv(None, None, None).get_slice(tidx)
        part = thr.partition_S(sBuf)
        for i in cutlass.range(4, unroll_full=True):
            if i < cute.size(part.shape, mode=[3]):
                cute.arch.sync_threads()
        """)
    w0, w1 = shared_ids(m, 0), shared_ids(m, 1)
    assert len(w0) == 4 and None not in w0 and w0 == w1


def test_size_of_a_per_lane_value_stays_per_lane():
    m = model("""\
        if 3 < cute.size((tidx, 2), mode=[0]):
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == shared_ids(m, 1) == [None]  # a choice of each warp's own


# A stage (index, phase) a helper advances, as cuDNN's frost kernels keep theirs, flipped on every
# trip inside `if const_expr(option):` where the option is a host value that does not fold.
STAGE_HELPERS = """
from typing import NamedTuple


class Stage(NamedTuple):
    idx: object
    phase: object


@cute.jit
def next_stage(st, stages):
    nxt = st.idx + cutlass.Int32(1)
    return Stage(idx=nxt % cutlass.Int32(stages), phase=st.phase ^ (nxt // cutlass.Int32(stages)))


@cute.jit
def spin_wait(bar, phase):
    while not cute.arch.mbarrier_try_wait(bar, phase):
        pass
"""

PING_PONG_UNDER_AN_OPTION = """\
smem = cutlass.utils.SmemAllocator()
full = smem.allocate_array(cutlass.Int64, num_elems=1)
empty = smem.allocate_array(cutlass.Int64, num_elems=1)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    cute.arch.mbarrier_init(full, 32)
    cute.arch.mbarrier_init(empty, 32)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
st = Stage(idx=cutlass.Int32(0), phase=cutlass.Int32(0))
for i in cutlass.range_constexpr(8):
    if cutlass.const_expr(self.dual):
        if warp_idx == 0:
            spin_wait(empty, st.phase ^ 1)
            cute.arch.mbarrier_arrive(full)
        if warp_idx == 1:
            spin_wait(full, st.phase)
            cute.arch.mbarrier_arrive(empty)
        st = next_stage(st, 1)
"""


def ping_pong_under_an_option(body: str) -> str:
    return kernel_source(body, init="self.dual = act_from_host()").replace(
        "\n\nclass K:", STAGE_HELPERS + "\n\nclass K:", 1)


def test_a_phase_flipped_on_every_trip_under_one_option_stays_one_select():
    # After each trip the phase is `select(dual, flipped, unchanged)` of the previous one; the
    # selects on `dual` inside the arms are cut to the arm `dual` takes there, so eight trips
    # stay one select of two numbers. Doubling per trip, the term grew past its size limit and
    # the condition had to become a configuration (which a frost kernel then could not make:
    # its wait's parity stayed unknown).
    src = ping_pong_under_an_option(PING_PONG_UNDER_AN_OPTION)
    m = build_models(src, "k.py", Settings())[0]
    assert not m.unmodeled
    assert all(not c.conds for c in m.configs)
    settings = Settings().with_overrides(verify_fixes=False)
    assert api.check_source(src, "k.py", settings, with_fixes=False).kernels[0].verdict == "verified"
    # The producer waiting on the phase itself (not the one before) deadlocks where `dual` holds.
    bad = ping_pong_under_an_option(PING_PONG_UNDER_AN_OPTION.replace("spin_wait(empty, st.phase ^ 1)",
                                                                       "spin_wait(empty, st.phase)"))
    k = api.check_source(bad, "k.py", settings, with_fixes=False).kernels[0]
    assert k.verdict == "counterexample" and [f.code for f in k.findings] == ["CS101"]


def test_a_shuffle_from_one_lane_of_a_per_lane_value_is_that_lanes_value():
    # Every lane reads lane 31's thread index: 31 in warp 0, 63 in warp 1.
    m = model("""\
        last = cute.arch.shuffle_sync(tidx, offset=31)
        if last < n:
            cute.arch.sync_threads()
        """)
    (w0,), (w1,) = shared_ids(m, 0), shared_ids(m, 1)
    assert w0 is not None and w1 is not None and w0 != w1


def test_a_shuffle_from_a_lane_that_differs_per_lane_stays_per_lane():
    m = model("""\
        mine = cute.arch.shuffle_sync(mA[tidx], offset=lane ^ 1)
        if mine > 0.0:
            cute.arch.sync_threads()
        half = cute.arch.shuffle_sync(mA[tidx], offset=3, mask_and_clamp=0x101F)
        if half > 0.0:
            cute.arch.sync_threads()
        """)
    assert shared_ids(m, 0) == [None, None]


def test_a_shuffle_of_a_uniform_value_keeps_its_term():
    m = model("""\
        if cute.arch.shuffle_sync(n, offset=lane) > 4:
            cute.arch.sync_threads()
        if n > 4:
            cute.arch.sync_threads()
        """)
    first, second = shared_ids(m, 0)
    assert first == second is not None


SCHEDULER_BROADCAST = """\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
tidx, _, _ = cute.arch.thread_idx()
if warp_idx == 0:
    cute.arch.mbarrier_init(bars, 32)
    cute.arch.mbarrier_init(bars + 1, 32)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
if warp_idx == 0:
    last = cute.arch.shuffle_sync(tidx, offset=31)
    stage = cutlass.Int32(0)
    if last < mA.shape[0]:
        stage = stage + 1
    cute.arch.mbarrier_wait(bars + stage, 0)
if warp_idx == 1:
    cute.arch.mbarrier_arrive(bars)
    cute.arch.mbarrier_arrive(bars + 1)
"""


def test_a_stage_advanced_on_a_condition_of_a_shuffled_lane_is_waited_on_each_side():
    # The shuffle gives lane 31's index, so `last < mA.shape[0]` is a condition on the tensor's
    # extent, the same in every thread: the stage after it is a select of the two sides'
    # stages (the shuffle was a value per lane: the wait unmodeled).
    settings = Settings().with_overrides(verify_fixes=False)
    good = kernel_source(SCHEDULER_BROADCAST)
    m = build_models(good, "k.py", Settings())[0]
    assert not m.unmodeled
    assert api.check_source(good, "k.py", settings, with_fixes=False).kernels[0].verdict == "verified"
    # The other warp arriving on the first stage only: where the condition holds the wait is on
    # the second, which no one completes.
    bad = kernel_source(SCHEDULER_BROADCAST.replace("    cute.arch.mbarrier_arrive(bars + 1)\n", ""))
    k = api.check_source(bad, "k.py", settings, with_fixes=False).kernels[0]
    assert k.verdict == "counterexample" and [f.code for f in k.findings] == ["CS101"]


LANE_ZERO_BROADCAST = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
flag = smem.allocate_array(cutlass.Int32, num_elems=4)
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
if warp == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
        flag[0] = mA[0]
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
x = cutlass.Int32(0)
if lane == 0:
    x = flag[0]
x = cute.arch.shuffle_sync(x, 0)
phase = cutlass.Int32(0)
if warp == 0:
    if x > 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive(bar)
if warp == 1:
    if x > 0:
        phase = phase ^ 1
    cute.arch.mbarrier_wait(bar, phase ^ 1)
"""


def test_a_value_two_warps_broadcast_from_lane_zero_is_not_taken_apart_per_warp():
    # Both warps read the same flag through lane 0 (cuDNN's CLC payload, `warp_broadcast=True`):
    # on the GPU they agree. A value of its own per warp would let the consumer wait for an
    # arrival the producer skipped (a false CS101); the phase stays unknown instead.
    src = kernel_source(LANE_ZERO_BROADCAST)
    k = api.check_source(src, "k.py", Settings().with_overrides(verify_fixes=False), with_fixes=False).kernels[0]
    assert k.verdict == "inconclusive" and not k.findings
