"""cp.async groups, TMEM allocation handoff and griddepcontrol in the front end."""
from cutespin import ir
from cutespin.config import Settings
from cutespin.frontend import build_models

HEAD = '''
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils as utils
from cutlass.cute.nvgpu import cpasync


class K:
    @cute.kernel
    def kernel(self, mA: cute.Tensor, flag: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        sA = smem.allocate_tensor(cutlass.Float32, cute.make_layout((32, 32, 2)), 16)
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32)
        thr = cute.make_tiled_copy_tv(atom, cute.make_layout(128), cute.make_layout(1)).get_slice(tidx)
        tAsA = thr.partition_D(sA)
        tAgA = thr.partition_S(mA)
'''


def _ops(body: str):
    src = HEAD + "".join("        " + line + "\n" for line in body.strip().splitlines())
    k = build_models(src, "k.py", Settings())[0]
    return k, (list(ir.walk(k.processes[0].variants[-1])) if k.processes else [])


def test_wait_group_retires_all_but_the_newest_groups():
    k, ops = _ops("""
cute.copy(thr, tAgA, tAsA[None, None, 0])
cute.arch.cp_async_commit_group()
cute.copy(thr, tAgA, tAsA[None, None, 1])
cute.arch.cp_async_commit_group()
cute.arch.cp_async_wait_group(1)
cute.arch.cp_async_wait_group(0)
""")
    copies = [op for op in ops if isinstance(op, ir.CpAsyncCopy)]
    waits = [op for op in ops if isinstance(op, ir.CpAsyncWait)]
    assert [c.region.name for c in copies] == ["sA[stage 0] (CTA 0)", "sA[stage 1] (CTA 0)"]
    assert all(c.part for c in copies)  # written through the thread partition
    assert waits[0].done_copies == [copies[0]]
    assert waits[1].done_copies == [copies[1]]
    assert not k.unmodeled


def test_uncommitted_or_branch_copies_stay_in_flight():
    _, ops = _ops("""
if flag > 0:
    cute.copy(thr, tAgA, tAsA[None, None, 0])
cute.arch.cp_async_commit_group()
cute.copy(thr, tAgA, tAsA[None, None, 1])
cute.arch.cp_async_wait_group(0)
""")
    wait = next(op for op in ops if isinstance(op, ir.CpAsyncWait))
    # The branch's copy was committed (retired); the uncommitted copy is not.
    assert [c.region.name for c in wait.done_copies] == ["sA[stage 0] (CTA 0)"]


def test_unknown_group_count_is_unmodeled():
    k, _ = _ops("cute.arch.cp_async_wait_group(flag)")
    assert [u.construct for u in k.unmodeled] == ["cp_async_wait_group"]


def test_griddepcontrol_is_an_assumption_not_unmodeled():
    k, ops = _ops("""
cute.arch.griddepcontrol_wait()
cute.arch.griddepcontrol_launch_dependents()
""")
    assert not k.unmodeled
    assert any("programmatic dependent launch" in a for a in k.assumptions)


def test_tmem_address_handoff_is_an_smem_write_then_read():
    k, ops = _ops("""
holder = smem.allocate_array(cutlass.Int32, 1)
if cute.arch.warp_idx() == 0:
    cute.arch.alloc_tmem(128, holder)
cute.arch.sync_threads()
ptr = cute.arch.retrieve_tmem_ptr(cutlass.Float32, alignment=16, ptr_to_buffer_holding_addr=holder)
cute.arch.fence_view_async_tmem_load()
cute.arch.dealloc_tmem(ptr, 128)
""")
    acc = [(op.write, op.region.name) for op in ops if isinstance(op, ir.Access) and "holder" in op.region.name]
    assert acc == [(True, "holder (CTA 0)"), (False, "holder (CTA 0)")]
    assert not k.unmodeled
    # TMEM contents are modeled now (tests/frontend/test_tmem.py); only untraced tensors are stated.
    assert not any("TMEM contents are not tracked" in a for a in k.assumptions)
    assert any("not built from the retrieved TMEM pointer" in a for a in k.assumptions)


def test_functools_partial_calls_through_to_the_bound_function():
    src = HEAD.replace("import cutlass\n", "from functools import partial\nimport cutlass\n", 1) + '''
        copy = partial(cute.copy, thr, pred=None)
        copy(tAgA, tAsA[None, None, 0])
        cute.arch.cp_async_commit_group()
'''
    k = build_models(src, "k.py", Settings())[0]
    ops = list(ir.walk(k.processes[0].variants[-1]))
    assert [type(op).__name__ for op in ops if not isinstance(op, ir.Access)] == ["CpAsyncCopy", "CpAsyncCommit"]
    assert not k.unmodeled


def test_per_thread_partitions_are_a_stated_assumption():
    """Accesses through one partition call site are taken as other threads' elements: the
    verdict must say so (samples/cp_async_own_partition_ok.py relies on it)."""
    from pathlib import Path
    sample = Path(__file__).resolve().parents[2] / "samples" / "cp_async_own_partition_ok.py"
    k = build_models(sample.read_text(), str(sample), Settings())[0]
    assert any("per-thread partitions" in a for a in k.assumptions), k.assumptions


def test_a_branch_that_retired_its_oldest_group_lines_up_with_the_newest_groups():
    # One side waits for the oldest group, the other does not: both sides' pending groups end
    # in the stage-1 group, so the later wait(0) retires both copies (dist-moe's pipelined
    # load). Before, the groups were lined up oldest first and stage 1 stayed in flight.
    _, ops = _ops("""
cute.copy(thr, tAgA, tAsA[None, None, 0])
cute.arch.cp_async_commit_group()
cute.copy(thr, tAgA, tAsA[None, None, 1])
cute.arch.cp_async_commit_group()
if flag > 0:
    cute.arch.cp_async_wait_group(1)
cute.arch.cp_async_wait_group(0)
""")
    copies = [op for op in ops if isinstance(op, ir.CpAsyncCopy)]
    waits = [op for op in ops if isinstance(op, ir.CpAsyncWait)]
    assert waits[0].done_copies == [copies[0]]
    assert waits[-1].done_copies == copies


def test_a_group_only_one_side_committed_keeps_the_older_group_pending():
    # Only the `if` side commits a second group: on the other side the stage-0 group is still
    # the newest, and wait(1) must not retire it.
    _, ops = _ops("""
cute.copy(thr, tAgA, tAsA[None, None, 0])
cute.arch.cp_async_commit_group()
if flag > 0:
    cute.copy(thr, tAgA, tAsA[None, None, 1])
    cute.arch.cp_async_commit_group()
cute.arch.cp_async_wait_group(1)
cute.arch.cp_async_wait_group(0)
""")
    copies = [op for op in ops if isinstance(op, ir.CpAsyncCopy)]
    first = copies[0]  # committed before the branch, on both paths
    (choice,) = [op for op in ops if isinstance(op, ir.Choice)]
    # `flag` is a kernel argument (CTA-uniform): the waits after the branch are duplicated into
    # each side, so each copy sees its own side's groups.
    committed_two, committed_one = choice.alternatives
    waits = [op for op in committed_two if isinstance(op, ir.CpAsyncWait)]
    assert [id(c) for c in waits[0].done_copies] == [id(first)]
    assert [c.region.name for c in waits[1].done_copies] == ["sA[stage 1] (CTA 0)"]
    waits = [op for op in committed_one if isinstance(op, ir.CpAsyncWait)]
    assert waits[0].done_copies == []  # the stage-0 group is still the newest
    assert [id(c) for c in waits[1].done_copies] == [id(first)]


def test_a_group_only_one_side_of_a_per_warp_condition_committed_keeps_the_older_group_pending():
    # A condition that may differ between warps is not split: the sides are merged, and wait(1)
    # must not retire the stage-0 group (it is the newest on the `else` side).
    _, ops = _ops("""
cute.copy(thr, tAgA, tAsA[None, None, 0])
cute.arch.cp_async_commit_group()
if cute.arch.clock() > flag:
    cute.copy(thr, tAgA, tAsA[None, None, 1])
    cute.arch.cp_async_commit_group()
cute.arch.cp_async_wait_group(1)
cute.arch.cp_async_wait_group(0)
""")
    copies = [op for op in ops if isinstance(op, ir.CpAsyncCopy)]
    waits = [op for op in ops if isinstance(op, ir.CpAsyncWait)]
    assert waits[0].done_copies == []
    assert sorted(map(id, waits[1].done_copies)) == sorted(map(id, copies))


def test_compile_time_conditions_on_a_loop_bound_follow_the_trip_count():
    # `self.n` bounds a runtime loop; `const_expr(self.n > 1)` before the loop takes the value
    # the trip-count configuration gives it instead of an independent choice.
    k, _ = _ops("""
if cutlass.const_expr(self.n > 1):
    cute.copy(thr, tAgA, tAsA[None, None, 1])
    cute.arch.cp_async_commit_group()
for i in cutlass.range_constexpr(self.n):
    cute.arch.cp_async_wait_group(0)
    cute.arch.sync_threads()
""")
    variants = k.processes[0].variants
    assert len(variants) > 1
    for trips, v in enumerate(variants, start=1):
        ops = list(ir.walk(v))
        assert not any(isinstance(op, ir.Choice) for op in ops)
        assert sum(isinstance(op, ir.CpAsyncCopy) for op in ops) == (1 if trips > 1 else 0)


def test_a_group_count_from_a_loop_bound_is_the_immediate_of_each_trip():
    # quack's rotary kernel: `cp_async_wait_group(self.tile_h - h - 1)` inside
    # `range_constexpr(self.tile_h)`. The count is a PTX immediate, so `self.tile_h` has the trip
    # count of the configuration: the first trip waits for all but the newest groups, the last
    # for all of them.
    k, _ = _ops("""
for h in cutlass.range_constexpr(self.n):
    cute.copy(thr, tAgA, tAsA[None, None, 0])
    cute.arch.cp_async_commit_group()
for h in cutlass.range_constexpr(self.n):
    cute.arch.cp_async_wait_group(self.n - h - 1)
    cute.arch.sync_threads()
""")
    assert not k.unmodeled, k.unmodeled
    for trips, v in enumerate(k.processes[0].variants, start=1):
        counts = [op.pending for op in ir.walk(v) if isinstance(op, ir.CpAsyncWait)]
        assert counts == list(range(trips - 1, -1, -1))


def test_a_wait_group_count_chosen_on_a_uniform_condition_is_a_configuration():
    """`cp_async_wait_group(1 if const_expr(self.num_stages_dO > 1) else 0)` (flash-attn-4's
    backward kernel): the condition becomes a configuration of its own (P14), in which the count
    is a number."""
    k, _ = _ops("""
cute.copy(thr, tAgA, tAsA[None, None, 0])
cute.arch.cp_async_commit_group()
cute.copy(thr, tAgA, tAsA[None, None, 1])
cute.arch.cp_async_commit_group()
cute.arch.cp_async_wait_group(1 if cutlass.const_expr(flag > 0) else 0)
""")
    assert not k.unmodeled
    assert len(k.configs) == 2
    retired = sorted(len(op.done_copies) for v in k.processes[0].variants for op in ir.walk(v)
                     if isinstance(op, ir.CpAsyncWait))
    assert retired == [1, 2]  # wait_group(1) retires the older group, wait_group(0) both


def test_a_uniform_select_of_open_indices_is_a_view_not_a_read():
    """`sA[(None, 0, None) if c else (0, None, None)]` slices a view on either side (flash-attn-4's
    `LSEslice`): no access until the view is copied."""
    k, ops = _ops("""
idx = (None, None, 0) if cutlass.const_expr(flag > 0) else (None, None, 1)
v = sA[idx]
""")
    assert not any(isinstance(op, ir.Access) and op.region.name.startswith("sA") for op in ops)
    assert not k.unmodeled


def test_a_count_from_a_loop_bound_wins_over_the_select_behind_the_bound():
    """quack's rotary kernel: `self.tile_h = 2 if self.dim <= 96 else 1` (a select) bounds
    `range_constexpr(self.tile_h)`, and `cp_async_wait_group(self.tile_h - h - 1)` takes the
    bound's value in each configuration (P9), never a select value that contradicts it."""
    src = '''
import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync


class K:
    def __init__(self, dim):
        self.dim = dim
        self.tile_h = 2 if self.dim <= 96 else 1

    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.kernel(mA).launch(grid=(1, 1, 1), block=(128, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        smem = cutlass.utils.SmemAllocator()
        sA = smem.allocate_tensor(cutlass.Float32, cute.make_layout((32, 32, 2)), 16)
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float32, num_bits_per_copy=32)
        thr = cute.make_tiled_copy_tv(atom, cute.make_layout(128), cute.make_layout(1)).get_slice(tidx)
        tAsA = thr.partition_D(sA)
        tAgA = thr.partition_S(mA)
        for h in cutlass.range_constexpr(self.tile_h):
            cute.copy(thr, tAgA, tAsA[None, None, h])
            cute.arch.cp_async_commit_group()
        for h in cutlass.range_constexpr(self.tile_h):
            cute.arch.cp_async_wait_group(self.tile_h - h - 1)
            cute.arch.sync_threads()
'''
    k = build_models(src, "k.py", Settings())[0]
    assert not k.unmodeled, k.unmodeled


def test_a_long_loop_of_copies_is_not_checked_as_one_trip():
    # Nothing in its text names synchronization, but each trip issues a cp.async copy: one trip
    # does not stand for 1024 of them.
    k, _ = _ops("""
for i in cutlass.range(1024):
    cute.copy(thr, tAgA, tAsA[None, None, i % 2])
cute.arch.cp_async_commit_group()
cute.arch.cp_async_wait_group(0)
""")
    assert any("checked as one trip, does more than load and store" in u.why for u in k.unmodeled), k.unmodeled
