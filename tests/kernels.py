"""Build small CuTe DSL kernel sources for tests: a class with a launching `__call__`."""
import textwrap

HEADER = """\
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync
"""


def kernel_source(body: str, *, threads: int = 64, cluster=None, init: str = "", params: str = "",
                  pins: str = "", grid: str = "(1, 1, 1)", extra_class: str = "") -> str:
    """A module with class `K`, `K.__init__` running `init`, and `K.kernel` running `body`."""
    cluster_arg = f", cluster={cluster}" if cluster else ""
    init_body = textwrap.indent(textwrap.dedent(init), " " * 8) if init.strip() else "        pass"
    kbody = textwrap.indent(textwrap.dedent(body), " " * 8)
    pin_line = f"    # cutespin: {pins}\n" if pins else ""
    extra = textwrap.indent(textwrap.dedent(extra_class), " " * 4) if extra_class else ""
    return (HEADER + "\n\nclass K:\n    def __init__(self):\n" + init_body + "\n\n"
            + "    @cute.jit\n    def __call__(self, mA: cute.Tensor" + (", " + params if params else "") + "):\n"
            + f"        self.kernel(mA).launch(grid={grid}, block=({threads}, 1, 1){cluster_arg})\n\n"
            + extra
            + pin_line + "    @cute.kernel\n    def kernel(self, mA: cute.Tensor):\n" + kbody)


def line_of(src: str, needle: str, nth: int = 1) -> int:
    """1-based line number of the nth line containing `needle`."""
    count = 0
    for i, line in enumerate(src.splitlines(), 1):
        if needle in line:
            count += 1
            if count == nth:
                return i
    raise AssertionError(f"{needle!r} not found")


def async_pipeline(name: str = "pipe", stages: int = 2) -> str:
    """Kernel-body lines creating `name`, a PipelineAsync of one 32-thread producer and consumer
    group over `bars` (2 x stages mbarriers), and `warp_idx`."""
    return f"""\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems={2 * stages})
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
{name} = pipeline.PipelineAsync.create(
    num_stages={stages},
    producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
    barrier_storage=bars,
)
"""


def interpretation_steps(src: str, compact: bool = False) -> int:
    """The interpretation steps the first kernel of `src` takes in all (the largest count of the
    registries its build made), in the full or the compact try (`build_kernel_compacting`)."""
    from cutespin.config import Settings
    from cutespin.frontend import build_kernel, interp
    from cutespin.frontend.discover import discover
    info = discover(src, "k.py")
    seen = []
    real_init = interp.Registry.__init__

    def init(self, *a, **kw):
        real_init(self, *a, **kw)
        seen.append(self)

    interp.Registry.__init__ = init
    try:
        build_kernel(info, info.kernels[0], "k.py", Settings(), compact=compact)
    finally:
        interp.Registry.__init__ = real_init
    return max(r.steps for r in seen)
