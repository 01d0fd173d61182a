"""Environment variables a kernel's build reads (`os.environ.get(name, default)`, `os.getenv`).

cuDNN's dense score recompute picks its producer routine with
`bool(int(os.environ.get("DENSE3WG_USE_WARP_SPLIT_PROD", "1")))` in the constructor; flash-msa sizes
its backward with a module constant `int(os.environ.get("MSA_NATIVE_BWD_MMA_ROWS", "64"))`. The
kernel is checked as built with the variable unset (its default, stated in the verdict), never with
the checker's own environment: a verdict must not depend on the shell the editor started from.
"""
from cutespin import api
from cutespin.config import Settings

from ..kernels import kernel_source, line_of

SETTINGS = Settings(verify_fixes=False)

# Warp 1 fills sBuf through the routine the build picks; only `fill_synced` reaches the barrier
# warp 0 waits at before reading, so `fill` deadlocks warp 0's barrier and races.
METHODS = """\
@cute.jit
def fill_synced(self, sBuf, lane):
    sBuf[lane] = 1.0
    cute.arch.sync_threads()

@cute.jit
def fill(self, sBuf, lane):
    sBuf[lane] = 1.0
"""

BODY = """\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
if warp == 1:
    fill_fn = self.fill_synced if cutlass.const_expr(self.synced) else self.fill
    fill_fn(sBuf, lane)
else:
    cute.arch.sync_threads()
    mA[lane] = sBuf[lane]
"""


def source(read: str) -> str:
    return "import os\n" + kernel_source(BODY, init=f"self.synced = bool(int({read}))", extra_class=METHODS)


def check(src: str):
    (k,) = api.check_source(src, "k.py", SETTINGS, with_fixes=False).kernels
    return k


def test_the_build_is_checked_with_the_variables_default(require_spin):
    src = source('os.environ.get("K_SYNCED", "1")')
    k = check(src)
    assert k.verdict == "verified", (k.verdict, k.reason, [f.message for f in k.findings])
    line = line_of(src, "os.environ.get")
    assert f"environment variable `K_SYNCED` (line {line}) is taken as unset: the kernel is checked as built " \
           f"with its default '1'" in k.assumptions


def test_a_default_that_picks_the_unsynchronized_routine_is_a_counterexample(require_spin):
    k = check(source('os.getenv("K_SYNCED", "0")'))
    assert k.verdict == "counterexample", (k.verdict, k.reason)
    assert any("environment variable `K_SYNCED`" in a and "default '0'" in a for a in k.assumptions)


def test_the_checkers_own_environment_is_not_read(require_spin, monkeypatch):
    monkeypatch.setenv("K_SYNCED", "0")
    assert check(source('os.environ.get("K_SYNCED", "1")')).verdict == "verified"


def test_a_module_constant_read_from_the_environment_folds_to_its_default(require_spin):
    # The rows each warp writes come from the environment; with the default 2 rows warp 1 writes
    # rows 0-1 and warp 0 reads row 1 behind no barrier: a race only the folded count shows.
    body = """\
smem = cutlass.utils.SmemAllocator()
sBuf = smem.allocate_tensor(cutlass.Float32, cute.make_layout((4, 32)))
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
lane = cute.arch.lane_idx()
if warp == 1:
    for r in cutlass.range_constexpr(ROWS):
        sBuf[r, lane] = 1.0
else:
    mA[lane] = sBuf[1, lane]
"""
    src = kernel_source(body).replace("import cutlass\n", 'import os\nimport cutlass\n\nROWS = int(os.environ.get('
                                                          '"K_ROWS", "ONE_OR_TWO"))\n', 1)
    races = check(src.replace("ONE_OR_TWO", "2"))
    assert races.verdict == "counterexample", (races.verdict, races.reason)
    assert races.findings[0].code == "CS201"
    apart = check(src.replace("ONE_OR_TWO", "1"))
    assert apart.verdict == "verified", (apart.verdict, apart.reason, [f.message for f in apart.findings])
