"""Synthetic CuTe DSL kernels for the benchmarks, generated from templates.

Every kernel here is ordinary CuTe DSL source that goes through the real front end
(`cutespin.frontend.build_models`) and lowering (`cutespin.model.promela.lower`).

- `ring(...)`: a warp-specialised TMA ring (tma_ring_ok.py generalised): one producer warp, C
  consumer warps, S stages, a runtime k loop (trip counts 1..loop), N CTAs per cluster (each CTA
  runs its own ring; a cluster barrier after the init and before the exit).
  `lanes=L` with `per_lane=True` is the *one process per lane* encoding of the same protocol:
  every consumer lane becomes its own warp whose elected lane does that lane's work, so SPIN sees
  C*L independent processes where the collapsed encoding has C (lanes in lockstep).
- `handoff(...)`: warp 0's lanes store a row, order it with sync_warp and arrive (elected), warp 1
  waits and reads, R rounds. Per lane: L producer warps (one lane each), ordered by a named
  barrier instead of sync_warp.
- `branches(...)`: n runtime branches between two waits (what the wait-to-wait atomic blocks
  must enumerate path by path).
- `OTHER_KERNEL`: a small unrelated kernel appended to a file for the latency benchmark's
  "one-line edit in an unrelated kernel" (its edited line is `OTHER_EDIT_LINE`).
"""
from __future__ import annotations

HEADER = '''import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync
'''


def ring(consumers: int = 1, stages: int = 2, loop: int = 3, cluster: int = 1, lanes: int = 32,
         per_lane: bool = False, bug: str = "") -> str:
    """A TMA ring. bug: "" (correct), "parity" (the producer starts at phase 0: deadlock),
    "count" (the empty barrier expects one arrival too few: over-arrival / early refill)."""
    C, S, N, L = consumers, stages, cluster, lanes
    if per_lane:
        cons_warps = C * L
        arrivals = C * L  # one arrival per modeled lane
    else:
        cons_warps = C
        arrivals = 32 * C  # every lane of every consumer warp
    empty_count = arrivals - 1 if bug == "count" else arrivals
    prod_phase = 0 if bug == "parity" else 1
    threads = 32 * (1 + cons_warps)
    if per_lane:
        consume = '''                cute.arch.mbarrier_wait(full_bar + stage, phase)
                with cute.arch.elect_one():
                    sA_stage = sA[None, None, stage]
                    vals = sA_stage[0, None].load()
                    cute.arch.mbarrier_arrive(empty_bar + stage)'''
    else:
        consume = '''                cute.arch.mbarrier_wait(full_bar + stage, phase)
                sA_stage = sA[None, None, stage]
                vals = sA_stage[lane, None].load()
                cute.arch.mbarrier_arrive(empty_bar + stage)'''
    cluster_sync = '''        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()''' if N > 1 else '''        cute.arch.sync_threads()'''
    tail = '''        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()''' if N > 1 else ''
    return HEADER + f'''

class Ring:
    def __init__(self):
        self.stages = {S}
        self.tile_bytes = 64 * 64 * 2
        self.threads = {threads}

    @cute.jit
    def __call__(self, mA: cute.Tensor, mOut: cute.Tensor, stream):
        a_layout = cute.make_layout((64, 64), stride=(64, 1))
        tma_atom_a, tma_tensor_a = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileG2SOp(), mA, a_layout, (64, 64))
        self.kernel(tma_atom_a, tma_tensor_a, mOut).launch(
            grid=({N}, 1, 1), block=(self.threads, 1, 1), cluster=({N}, 1, 1), stream=stream)

    # cutespin: loop={loop}
    @cute.kernel
    def kernel(self, tma_atom_a: cute.CopyAtom, mA_tma: cute.Tensor, mOut: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        bidx, _, _ = cute.arch.block_idx()
        smem = cutlass.utils.SmemAllocator()
        full_bar = smem.allocate_array(cutlass.Int64, num_elems=self.stages)
        empty_bar = smem.allocate_array(cutlass.Int64, num_elems=self.stages)
        sA = smem.allocate_tensor(
            cutlass.Float16,
            cute.make_layout((64, 64, self.stages), stride=(64, 1, 64 * 64)),
            byte_alignment=128,
        )
        if warp_idx == 0:
            with cute.arch.elect_one():
                for s in cutlass.range_constexpr(self.stages):
                    cute.arch.mbarrier_init(full_bar + s, 1)
                    cute.arch.mbarrier_init(empty_bar + s, {empty_count})
        cute.arch.mbarrier_init_fence()
{cluster_sync}
        gA = cute.local_tile(mA_tma, (64, 64), (bidx, None))
        k_tile_cnt = cute.size(gA, mode=[2])
        tAsA, tAgA = cpasync.tma_partition(
            tma_atom_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        if warp_idx == 0:
            stage = 0
            phase = {prod_phase}
            for k in cutlass.range(k_tile_cnt):
                cute.arch.mbarrier_wait(empty_bar + stage, phase)
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive_and_expect_tx(full_bar + stage, self.tile_bytes)
                cute.copy(tma_atom_a, tAgA[None, k], tAsA[None, stage], tma_bar_ptr=full_bar + stage)
                stage = stage + 1
                if stage == self.stages:
                    stage = 0
                    phase ^= 1
        else:
            stage = 0
            phase = 0
            for k in cutlass.range(k_tile_cnt):
{consume}
                stage = stage + 1
                if stage == self.stages:
                    stage = 0
                    phase ^= 1
{tail}
'''


def handoff(lanes: int = 32, rounds: int = 2, per_lane: bool = False, bug: str = "") -> str:
    """Lanes store a row, the warp orders the stores (sync_warp; per lane: a named barrier), one
    lane arrives on `full`; warp 1 waits, reads, and releases the row on `empty`. R rounds.
    bug "nosync": no sync_warp / named barrier before the elected arrive (a lane-level release race)."""
    L, R = lanes, rounds
    if per_lane:
        producers = L
        order = "" if bug == "nosync" else f"                cute.arch.barrier(barrier_id=1, number_of_threads={32 * L})"
        store = '''                with cute.arch.elect_one():
                    sRow[warp_idx] = 1.0'''
        arrive = '''                if warp_idx == 0:
                    with cute.arch.elect_one():
                        cute.arch.mbarrier_arrive(full)'''
    else:
        producers = 1
        order = "" if bug == "nosync" else "                cute.arch.sync_warp()"
        store = '''                sRow[lane] = 1.0'''
        arrive = '''                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(full)'''
    threads = 32 * (producers + 1)
    return HEADER + f'''

class Handoff:
    def __init__(self):
        self.threads = {threads}

    @cute.jit
    def __call__(self, mY: cute.Tensor, stream):
        self.kernel(mY).launch(grid=(1, 1, 1), block=(self.threads, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mY: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        full = smem.allocate_array(cutlass.Int64, num_elems=1)
        empty = smem.allocate_array(cutlass.Int64, num_elems=1)
        sRow = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32), byte_alignment=16)
        if warp_idx == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(full, 1)
                cute.arch.mbarrier_init(empty, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        phase = 0
        for r in cutlass.range_constexpr({R}):
            if warp_idx < {producers}:
                if r > 0:
                    cute.arch.mbarrier_wait(empty, phase ^ 1)
{store}
{order}
{arrive}
            else:
                cute.arch.mbarrier_wait(full, phase)
                mY[lane] = sRow[lane]
                cute.arch.sync_warp()
                with cute.arch.elect_one():
                    cute.arch.mbarrier_arrive(empty)
            phase ^= 1
'''


def branches(n: int = 4) -> str:
    """A producer that takes n runtime branches (each stores or not) between two handoffs."""
    body = "\n".join(f'''            if mX[{i}] > 0.0:
                sRow[lane] = mX[{i}]''' for i in range(n))
    return HEADER + f'''

class Branches:
    @cute.jit
    def __call__(self, mX: cute.Tensor, stream):
        self.kernel(mX).launch(grid=(1, 1, 1), block=(64, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mX: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        full = smem.allocate_array(cutlass.Int64, num_elems=1)
        sRow = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32), byte_alignment=16)
        if warp_idx == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(full, 32)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if warp_idx == 0:
            sRow[lane] = 0.0
{body}
            cute.arch.mbarrier_arrive(full)
        else:
            cute.arch.mbarrier_wait(full, 0)
            mX[lane] = sRow[lane]
'''


# The unrelated kernel appended for the "one-line edit" measurement. Its edited line changes how
# many CTA barriers it runs, so each edit is a new model (SPIN must run on it) while the file's
# other kernels keep their models (their SPIN results come from the cache).
OTHER_EDIT_LINE = "        extra_syncs = {n}  # cutespin-bench: edited line"
OTHER_KERNEL = '''

class BenchUnrelated:
    @cute.jit
    def __call__(self, mY: cute.Tensor, stream):
        self.kernel(mY).launch(grid=(1, 1, 1), block=(64, 1, 1), stream=stream)

    @cute.kernel
    def kernel(self, mY: cute.Tensor):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        smem = cutlass.utils.SmemAllocator()
        ready = smem.allocate_array(cutlass.Int64, num_elems=1)
        sRow = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32), byte_alignment=16)
        if warp_idx == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(ready, 32)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
{edit}
        for i in cutlass.range_constexpr(extra_syncs):
            cute.arch.sync_threads()
        if warp_idx == 0:
            sRow[lane] = 2.0
            cute.arch.mbarrier_arrive(ready)
        else:
            cute.arch.mbarrier_wait(ready, 0)
            mY[lane] = sRow[31 - lane]
'''


def with_other(text: str, n: int = 0) -> str:
    """`text` with the unrelated kernel appended (its edited line set to `n`). The file must
    already import cutlass and cutlass.cute as cute (every CuTe DSL kernel file does)."""
    return text.rstrip("\n") + "\n" + OTHER_KERNEL.format(edit=OTHER_EDIT_LINE.format(n=n))
