"""Class-level constants of the kernel's class (`THREADS_PER_CTA = 384`, `PRODUCER_WG = 2`) are
what `self.X` reads when no method assigns X: the launch's block size and the warpgroup dispatch
fold from them (cudnn's DeepSeek indexer backward launches `block=[self.THREADS_PER_CTA, 1, 1]`
and dispatches warpgroups on `self.*_WG` class constants)."""
from cutespin import api
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import HEADER, line_of

BODY = """\
    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.kernel(mA).launch(grid=(1, 1, 1), block=[self.THREADS_PER_CTA, 1, 1])

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        smem = cutlass.utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        tidx, _, _ = cute.arch.thread_idx()
        warp_group = cute.arch.make_warp_uniform(tidx // self.WARPGROUP_SIZE)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, self.WARPGROUP_SIZE)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if warp_group == self.LOAD_WG:
            cute.arch.mbarrier_arrive(bar)
        if warp_group == self.COMPUTE_WG:
            cute.arch.mbarrier_wait(bar, 0)
"""


def source(constants: str, bases: str = "", init: str = "pass") -> str:
    return (HEADER + bases + f"\n\nclass K{'(Base)' if bases else ''}:\n" + constants
            + f"\n    def __init__(self):\n        {init}\n\n" + BODY)


CONSTANTS = """\
    WARPGROUP_SIZE = 128
    LOAD_WG = 2
    COMPUTE_WG: int = 0
    THREADS_PER_CTA = WARPGROUP_SIZE * 3
"""


def check(src: str):
    kr = api.check_source(src, "k.py", Settings(verify_fixes=False), with_fixes=False).kernels[0]
    return kr.verdict, [(f.code, f.span.line) for f in kr.findings]


def test_block_size_and_roles_fold_from_class_constants():
    src = source(CONSTANTS)
    m = build_models(src, "k.py", Settings())[0]
    assert m.warps == 12
    assert not [a for a in m.assumptions if a.startswith("block size")]
    assert check(src)[0] == "verified"


def test_a_load_warpgroup_outside_the_block_still_deadlocks():
    # The same kernel launched with two warpgroups: the load warpgroup never runs.
    src = source(CONSTANTS.replace("WARPGROUP_SIZE * 3", "WARPGROUP_SIZE * 2"))
    verdict, found = check(src)
    assert verdict == "counterexample"
    assert ("CS101", line_of(src, "mbarrier_wait(bar, 0)")) in found


def test_constants_of_a_base_class_and_a_subclass_override():
    base = "\n\nclass Base:\n    WARPGROUP_SIZE = 128\n    LOAD_WG = 1\n    COMPUTE_WG = 0\n    THREADS_PER_CTA = 256\n"
    # The subclass moves the load warpgroup to 2 and widens the block: both must be read.
    src = source("    LOAD_WG = 2\n    THREADS_PER_CTA = 384\n", bases=base)
    assert build_models(src, "k.py", Settings())[0].warps == 12
    assert check(src)[0] == "verified"


def test_a_constructor_assignment_overrides_the_class_default():
    # `self.LOAD_WG = 3` in __init__ (a warpgroup past the block) wins over the class's 2.
    src = source(CONSTANTS, init="self.LOAD_WG = 3")
    verdict, found = check(src)
    assert verdict == "counterexample"
    assert ("CS101", line_of(src, "mbarrier_wait(bar, 0)")) in found


# A block computed from a constructor argument that does not fold (`self.threads = 32 *
# (q_tile // 16 + 1)`, cudnn's SM120 dQ GEMM): the argument is solved from the block size the
# model takes, so that everything else the constructor derives from it (the producer warp's
# index, a named barrier's thread count) agrees with that block.
SOLVED = HEADER + """

class K:
    def __init__(self, q_tile):
        self.num_compute_warps = q_tile // 16
        self.load_warp_id = self.num_compute_warps
        self.threads = 32 * (self.num_compute_warps + 1)

    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.kernel(mA).launch(grid=(1, 1, 1), block=(self.threads, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == self.load_warp_id:
            cute.arch.barrier_arrive(barrier_id=2, number_of_threads=self.threads)
        if warp < self.load_warp_id:
            cute.arch.barrier(barrier_id=2, number_of_threads=self.threads)
"""


def test_a_constructor_argument_is_solved_from_the_block_size_taken():
    m = build_models(SOLVED, "k.py", Settings())[0]
    assert m.warps == 4
    said = [a for a in m.assumptions if a.startswith("host argument q_tile")]
    assert said and "q_tile = 48" in said[0] and "128 threads" in said[0]
    assert check(SOLVED)[0] == "verified"


def test_a_pinned_constructor_argument_is_not_solved():
    # Pinned so that the block has 3 warps (q_tile=32): checked as the user says.
    src = SOLVED.replace("    @cute.kernel", "    # cutespin: q_tile=32\n    @cute.kernel")
    m = build_models(src, "k.py", Settings())[0]
    assert m.warps == 3
    assert not [a for a in m.assumptions if a.startswith("host argument q_tile")]
    assert check(src)[0] == "verified"


# mjolnir's decode kernel: the roles after the convert warp groups sit past them, and the block
# is `(2 + convert_groups)` warp groups. Two warp groups would need no convert group, which the
# positive argument cannot be; the block is the next one up that the argument makes (three, with
# one convert group), not two groups apart from it, where the producer's warp was missing (a
# false CS101 at the consumer's wait).
GROUPS_BEFORE_THE_PRODUCER = HEADER + """

class K:
    def __init__(self, convert_groups=1):
        self.cvt_begin = 1
        self.cvt_end = 1 + convert_groups
        self.load_warp_id = (1 + convert_groups) * 4
        self.threads = (2 + convert_groups) * 128

    @cute.jit
    def __call__(self, mA: cute.Tensor):
        self.kernel(mA).launch(grid=(1, 1, 1), block=(self.threads, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor):
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        group = warp // 4
        smem = cutlass.utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, num_elems=1)
        if warp == 0:
            with cute.arch.elect_one():
                cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if group == 0:
            cute.arch.mbarrier_wait(bar, 0)
        elif group >= self.cvt_begin and group < self.cvt_end:
            mA[warp] = 0.0
        elif warp == self.load_warp_id:
            with cute.arch.elect_one():
                cute.arch.mbarrier_arrive(bar)
"""


def test_a_block_the_argument_cannot_make_is_raised_to_one_it_makes():
    m = build_models(GROUPS_BEFORE_THE_PRODUCER, "k.py", Settings())[0]
    assert m.warps == 12
    said = [a for a in m.assumptions if a.startswith("host argument convert_groups")]
    assert said and "convert_groups = 1" in said[0] and "384 threads" in said[0]
    assert check(GROUPS_BEFORE_THE_PRODUCER)[0] == "verified"
