"""The front end turns DSL calls into IR ops per (CTA, warp), with lanes and loops resolved."""
from cutespin import ir
from cutespin.config import Settings
from cutespin.frontend import build_models

from ..kernels import async_pipeline, kernel_source, line_of

INIT_BAR = """\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=4)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
if warp_idx == 0:
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(bar, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
"""


def model(src: str, **settings):
    ms = build_models(src, "k.py", Settings(**settings))
    assert len(ms) == 1
    return ms[0]


def ops(m, warp, cta=0, variant=-1):
    for p in m.processes:
        if p.warp == warp and p.cta == cta:
            return p.variants[variant]
    return []


def kinds(ops_):
    return [type(o).__name__ for o in ops_]


def test_warp_dispatch_forms():
    src = kernel_source(INIT_BAR + """\
if warp_idx == 0:
    cute.arch.mbarrier_arrive(bar + 1)
elif warp_idx in (1, 2):
    cute.arch.mbarrier_arrive(bar + 2)
elif warp_idx < 4 or warp_idx == 7:
    cute.arch.mbarrier_arrive(bar + 3)
""", threads=256)
    m = model(src)
    arrive_bar = {p.warp: [o.bar.name for o in p.variants[0] if isinstance(o, ir.MbArrive)] for p in m.processes}
    assert arrive_bar[0] == ["bar[1] (CTA 0)"]
    assert arrive_bar[1] == arrive_bar[2] == ["bar[2] (CTA 0)"]
    assert arrive_bar[3] == arrive_bar[7] == ["bar[3] (CTA 0)"]
    assert arrive_bar[5] == []


def test_self_attribute_role_ids_and_tuples():
    src = kernel_source(INIT_BAR + """\
if warp_idx == self.producer_warp:
    cute.arch.mbarrier_arrive(bar)
if warp_idx in self.consumer_warps:
    cute.arch.mbarrier_wait(bar, 0)
""", threads=128, init="self.producer_warp = 3\nself.consumer_warps = (0, 1)\n")
    m = model(src)
    assert any(isinstance(o, ir.MbArrive) for o in ops(m, 3))
    assert [type(o).__name__ for o in ops(m, 1) if isinstance(o, ir.MbWait)] == ["MbWait"]
    assert not any(isinstance(o, ir.MbWait) for o in ops(m, 2))


def test_lane_predicates_split_lane_classes_and_count_arrivals():
    src = kernel_source(INIT_BAR + """\
lane = cute.arch.lane_idx()
if warp_idx == 1:
    if lane < 4:
        cute.arch.mbarrier_arrive(bar)
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive(bar + 1, arrive_count=2)
""")
    m = model(src)
    p = next(p for p in m.processes if p.warp == 1)
    arrives = [o for o in p.variants[0] if isinstance(o, ir.MbArrive)]
    assert arrives[0].count == 4  # four lanes arrive once each
    assert arrives[1].count == 2  # the elected lane arrives with count 2
    sizes = sorted(c.size for c in p.lane_classes)
    assert sizes == [1, 3, 28]
    assert any(c.elected for c in p.lane_classes)


def test_thread_idx_predicate_selects_one_lane_of_one_warp():
    src = kernel_source(INIT_BAR + """\
tidx, _, _ = cute.arch.thread_idx()
if tidx == 32:
    cute.arch.mbarrier_arrive(bar)
""")
    m = model(src)
    assert not any(isinstance(o, ir.MbArrive) for o in ops(m, 0))
    a = [o for o in ops(m, 1) if isinstance(o, ir.MbArrive)]
    assert len(a) == 1 and a[0].count == 1


def test_mbarrier_primitives_and_pointer_arithmetic():
    src = kernel_source(INIT_BAR + """\
if warp_idx == 0:
    s = 2
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive_and_expect_tx(bar + s, 128)
        cute.arch.mbarrier_expect_tx(bar + 3, 64)
    # Every lane of the warp expects: 32 x 16 units.
    cute.arch.mbarrier_expect_tx(bar + 1, 16)
    while not cute.arch.mbarrier_try_wait(bar + s, 1):
        pass
""")
    m = model(src)
    o = ops(m, 0)
    aet = next(x for x in o if isinstance(x, ir.MbArrive))
    assert aet.bar.name.startswith("bar[2]") and aet.tx == 128 and aet.count == 1
    et = next(x for x in o if isinstance(x, ir.MbExpectTx))
    assert et.bar.name.startswith("bar[3]") and et.tx == 64
    assert [x.tx for x in o if isinstance(x, ir.MbExpectTx)] == [64, 32 * 16]
    w = next(x for x in o if isinstance(x, ir.MbWait))
    assert w.bar.name.startswith("bar[2]") and w.parity == 1


def test_parity_bookkeeping_through_unrolled_ring():
    src = kernel_source(INIT_BAR + """\
if warp_idx == 1:
    stage = 0
    phase = 0
    for k in cutlass.range(n):
        cute.arch.mbarrier_wait(bar + stage, phase)
        stage = stage + 1
        if stage == self.stages:
            stage = 0
            phase ^= 1
""", init="self.stages = 2\n")
    src = src.replace("def kernel(self, mA: cute.Tensor):", "def kernel(self, mA: cute.Tensor, n: cutlass.Int32):")
    m = model(src)
    assert m.bounds["loop"] == 5  # 2 x stages + 1
    assert len(m.configs) == 5
    waits = [(w.bar.name.split(" ")[0], w.parity) for w in ops(m, 1) if isinstance(w, ir.MbWait)]
    assert waits == [("bar", 0), ("bar[1]", 0), ("bar", 1), ("bar[1]", 1), ("bar", 0)]
    assert any("takes every trip count" in a for a in m.assumptions)


def test_struct_storage_barriers_and_named_barriers():
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
storage = smem.allocate(self.shared_storage)
full = storage.full_mbar.data_ptr()
warp_idx = cute.arch.warp_idx()
if warp_idx == 0:
    cute.arch.mbarrier_init(full + 1, 32)
cute.arch.barrier(barrier_id=2, number_of_threads=64)
cute.arch.barrier_arrive(barrier_id=3, number_of_threads=64)
nb = pipeline.NamedBarrier(barrier_id=4, num_threads=64)
nb.arrive_and_wait()
""")
    m = model(src)
    o = ops(m, 0)
    init = next(x for x in o if isinstance(x, ir.MbInit))
    assert init.bar.name.startswith("full_mbar[1]") and init.count == 32
    nbs = [(x.barrier_id, x.threads, x.wait) for x in o if isinstance(x, ir.NamedBarrier)]
    assert nbs == [(2, 64, True), (3, 64, False), (4, 64, True)]


def test_tma_copy_bytes_from_layout_and_tma_store():
    src = kernel_source(INIT_BAR + """\
sA = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 32, self.stages)), byte_alignment=128)
if warp_idx == 0:
    cute.copy(tma_atom, mA, sA[None, None, 1], tma_bar_ptr=bar + 1)
    cute.copy(tma_atom, sA[None, None, 0], mA)
    cute.arch.cp_async_bulk_commit_group()
    cute.arch.cp_async_bulk_wait_group(0, read=True)
""", init="self.stages = 2\n")
    src = src.replace("def kernel(self, mA: cute.Tensor):", "def kernel(self, mA: cute.Tensor, tma_atom: cute.CopyAtom):")
    m = model(src)
    o = ops(m, 0)
    load = next(x for x in o if isinstance(x, ir.TmaLoad))
    assert load.tx == 64 * 32 * 2 and load.region.name.startswith("sA[stage 1]")
    store = next(x for x in o if isinstance(x, ir.TmaStore))
    assert store.region.name.startswith("sA[stage 0]")
    assert any(isinstance(x, ir.BulkWait) and x.read_only for x in o)


def test_expected_bytes_that_do_not_fold_set_by_another_warp_than_the_copy_are_unmodeled():
    # cutlass's TMA transpose tutorial: thread 0 expects the load's bytes at init, the TMA warp
    # copies. With the byte count unknown, one unit per copy can only be matched to an expect
    # that precedes the copy in the same warp; this one is reported, not counted as zero.
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
sA = smem.allocate_tensor(cutlass.Float16, layout_sA)
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
tidx, _, _ = cute.arch.thread_idx()
if tidx == 0:
    cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_expect_tx(bar, cute.size_in_bytes(cutlass.Float16, layout_sA))
cute.arch.mbarrier_init_fence()
cute.arch.barrier()
if warp_idx == 1:
    cute.copy(tma_atom, mA, sA, tma_bar_ptr=bar)
    with cute.arch.elect_one():
        cute.arch.mbarrier_arrive(bar)
if warp_idx == 0:
    cute.arch.mbarrier_wait(bar, 0)
    x = sA[tidx]
""")
    src = src.replace("def kernel(self, mA: cute.Tensor):",
                      "def kernel(self, mA: cute.Tensor, tma_atom: cute.CopyAtom, layout_sA: cute.Layout):")
    m = model(src)
    assert [(u.construct, u.line) for u in m.unmodeled] == [("mbarrier expect_tx", line_of(src, "mbarrier_expect_tx"))]


def test_cluster_remote_arrive_and_dsmem_store():
    src = kernel_source(INIT_BAR + """\
rank = cute.arch.block_idx_in_cluster()
peer = 1 - rank
buf = smem.allocate_tensor(cutlass.Float32, cute.make_layout(32))
cute.arch.cluster_arrive_relaxed()
cute.arch.cluster_wait()
if warp_idx == 0:
    remote = cute.arch.map_dsmem_ptr(buf.iterator, peer)
    remote.store(1.0)
    cute.arch.mbarrier_arrive(bar, peer_cta_rank_in_cluster=peer, scope="cluster")
""", cluster="(2, 1, 1)")
    m = model(src)
    assert m.ctas == 2 and m.cluster_size == 2
    o = ops(m, 0, cta=0)
    st = next(x for x in o if isinstance(x, ir.Access))
    assert st.write and st.region.cta == 1
    arr = next(x for x in o if isinstance(x, ir.MbArrive))
    assert arr.remote and arr.bar.cta == 1 and arr.scope == "cluster"
    assert any(isinstance(x, ir.ClusterArrive) and x.relaxed for x in o)


def test_gmem_flags_with_scopes_and_fence_release():
    src = kernel_source("""\
flag = mFlag.iterator
bidx, _, _ = cute.arch.block_idx()
if bidx == 0:
    cute.arch.fence_acq_rel_gpu()
    cute.arch.atomic_add(flag, 1, sem="relaxed", scope="gpu")
else:
    while cute.arch.load(flag, cutlass.Int32, sem="acquire", scope="gpu") < 1:
        pass
""", pins="grid=2")
    src = src.replace("def kernel(self, mA: cute.Tensor):", "def kernel(self, mA: cute.Tensor, mFlag: cute.Tensor):")
    m = model(src)
    assert m.ctas == 2
    up = next(x for x in ops(m, 0, cta=0) if isinstance(x, ir.FlagUpdate))
    assert up.release_scope == "gpu" and up.value == 1 and up.arrivals == 32
    wait = next(x for x in ops(m, 0, cta=1) if isinstance(x, ir.FlagWait))
    assert (wait.cmp, wait.value, wait.acquire_scope) == (">=", 1, "gpu")
    assert any("co-resident" in a for a in m.assumptions)


def test_constexpr_loops_unroll_and_const_expr_folds():
    src = kernel_source(INIT_BAR + """\
if cutlass.const_expr(self.use_two):
    for i in cutlass.range_constexpr(3):
        cute.arch.mbarrier_arrive(bar + i)
else:
    cute.arch.mbarrier_arrive(bar)
""", init="self.use_two = True\n")
    m = model(src)
    assert len([x for x in ops(m, 0) if isinstance(x, ir.MbArrive)]) == 3
    assert m.configs == [ir.TripConfig({})]


def test_unmodeled_constructs_are_reported_with_line():
    src = kernel_source(INIT_BAR + """\
p = pipeline.PipelineTmaAsync.create(num_stages=2, producer_group=None, consumer_group=None, tx_count=8)
cute.arch.mbarrier_wait(bar, runtime_phase)
""")
    m = model(src)
    constructs = {u.construct: u.line for u in m.unmodeled}
    assert constructs["PipelineTmaAsync.create"] == line_of(src, "PipelineTmaAsync.create")
    assert any(u.construct == "mbarrier wait" for u in m.unmodeled)


def test_config_comment_pins_values():
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=4)
if cute.arch.warp_idx() == 0:
    cute.arch.mbarrier_init(bar, self.count)
""", pins="stages=3 block=96 count=5", init="self.count = None\n")
    m = model(src)
    assert m.warps == 3
    assert m.bounds["stages"] == 3
    init = next(x for x in ops(m, 0) if isinstance(x, ir.MbInit))
    assert init.count == 5
    assert any("pinned" in a for a in m.assumptions)


def test_pyproject_pins_apply_per_kernel():
    src = kernel_source("""\
bar = cutlass.utils.SmemAllocator().allocate_array(cutlass.Int64, num_elems=1)
if cute.arch.warp_idx() == 0:
    cute.arch.mbarrier_init(bar, self.count)
""", init="self.count = None\n")
    m = model(src, kernel_pins={"K.kernel": {"count": 7, "block": 32}})
    assert m.warps == 1
    assert next(x for x in ops(m, 0) if isinstance(x, ir.MbInit)).count == 7


def test_init_count_over_hardware_maximum_is_a_static_finding():
    src = kernel_source("""\
bar = cutlass.utils.SmemAllocator().allocate_array(cutlass.Int64, num_elems=1)
if cute.arch.warp_idx() == 0:
    cute.arch.mbarrier_init(bar, 10**9)
""")
    m = model(src)
    assert [f.kind for f in m.static_findings] == ["overrun"]
    assert m.static_findings[0].span.line == line_of(src, "10**9")


def test_self_attributes_set_differently_on_two_branches_are_unknown():
    src = kernel_source("""\
nb = pipeline.NamedBarrier(barrier_id=1, num_threads=32 * len(self.comm_warps))
nb.arrive_and_wait()
""", init="""\
if self.use_comm:
    self.comm_warps = (0, 1)
else:
    self.comm_warps = ()
""").replace("    def __init__(self):", "    def __init__(self, use_comm=True):")
    src = src.replace("if self.use_comm:", "if use_comm:")
    m = model(src)
    # Neither branch's value is guessed: the count is derived from the warps that use the
    # barrier, and the verdict says so.
    assert not m.static_findings and not m.unmodeled
    assert any("thread count of named barrier 1 is not known" in a for a in m.assumptions)
    assert {o.threads for p in m.processes for o in p.variants[0] if isinstance(o, ir.NamedBarrier)} == {64}


def test_relaxed_float_atomics_are_data_reductions_unless_the_kernel_waits_on_gmem():
    reduce_only = kernel_source("""\
tidx, _, _ = cute.arch.thread_idx()
cute.arch.atomic_fmax(mA.iterator + tidx, 1.5)
cute.arch.red(mA.iterator + tidx, 2.5, op="add")
""")
    m = model(reduce_only)
    assert not m.unmodeled
    assert any("relaxed GMEM atomics (line" in a and "order nothing" in a for a in m.assumptions)
    # Next to a flag protocol the same atomics might be its other half: reported, not assumed.
    with_wait = kernel_source("""\
flag = mFlag.iterator
bidx, _, _ = cute.arch.block_idx()
cute.arch.atomic_fmax(mA.iterator + bidx, 1.5)
if bidx == 0:
    cute.arch.atomic_add(flag, 1, sem="release", scope="gpu")
else:
    while cute.arch.load(flag, cutlass.Int32, sem="acquire", scope="gpu") < 1:
        pass
""", pins="grid=2").replace("def kernel(self, mA: cute.Tensor):", "def kernel(self, mA: cute.Tensor, mFlag: cute.Tensor):")
    m = model(with_wait)
    assert [u.construct for u in m.unmodeled] == ["atomic_fmax"]
    assert "waits on GMEM" in m.unmodeled[0].why
    # A release atomic is synchronization whatever its operands: never assumed away.
    released = reduce_only.replace('cute.arch.atomic_fmax(mA.iterator + tidx, 1.5)',
                                   'cute.arch.atomic_fmax(mA.iterator + tidx, 1.5, sem="release")')
    assert [u.construct for u in model(released).unmodeled] == ["atomic_fmax"]


def test_break_and_continue_on_folded_paths_leave_the_unrolled_loop():
    src = kernel_source(INIT_BAR + """\
for i in cutlass.range_constexpr(6):
    if i == 1:
        continue
    if i == 4:
        break
    cute.arch.mbarrier_arrive(bar + i)
for name in ("a", "b"):
    if name == "b":
        continue
    cute.arch.mbarrier_arrive(bar + 7)
""")
    m = model(src)
    assert not m.unmodeled
    arrives = [o.bar.name.split(" ")[0] for o in ops(m, 0) if isinstance(o, ir.MbArrive)]
    assert arrives == ["bar", "bar[2]", "bar[3]", "bar[7]"]


def test_break_under_a_runtime_condition_is_reported():
    src = kernel_source(INIT_BAR + """\
for i in cutlass.range(4):
    if mA[i] > 0:
        break
    cute.arch.mbarrier_arrive(bar)
""")
    m = model(src)
    assert [(u.construct, u.why) for u in m.unmodeled] == [("kernel body", "break/continue under a runtime condition")]


HELPERS = '''
@cute.jit
def arrive_unless(bar, flag):
    if flag > 0:
        cute.arch.mbarrier_arrive(bar + 1)
        return 1
    cute.arch.mbarrier_arrive(bar + 2)
    cute.arch.mbarrier_arrive(bar + 3)
    return 1


@cute.jit
def reduce(val, op):
    if cutlass.const_expr(isinstance(val, cute.TensorSSA)):
        return reduce(val + 1, op)
    return op(val, val)
'''


def helper_source(body):
    src = kernel_source(INIT_BAR + body)
    return src.replace("\n\nclass K:", HELPERS + "\n\nclass K:", 1)


def test_return_under_a_runtime_condition_ends_only_that_side():
    m = model(helper_source("""\
r = arrive_unless(bar, mA[0])
cute.arch.mbarrier_arrive(bar)
"""))
    assert not m.unmodeled
    choice = next(o for o in ops(m, 0) if isinstance(o, ir.Choice))
    names = [[o.bar.name.split(" ")[0] for o in alt if isinstance(o, ir.MbArrive)] for alt in choice.alternatives]
    # The statements after the `if` in the helper run only on the side that did not return;
    # the caller's arrive comes after the whole choice.
    assert names == [["bar[1]"], ["bar[2]", "bar[3]"]]
    after = [o for o in ops(m, 0)[ops(m, 0).index(choice) + 1:] if isinstance(o, ir.MbArrive)]
    assert [o.bar.name.split(" ")[0] for o in after] == ["bar"]


def test_a_register_helper_recursing_on_unknown_values_is_cut_not_reported():
    m = model(helper_source("""\
x = reduce(mA[0], operator.add)
cute.arch.mbarrier_arrive(bar)
"""))
    assert not m.unmodeled
    assert [type(o).__name__ for o in ops(m, 0) if not isinstance(o, ir.Access)][-1] == "MbArrive"


PAIRWISE_TREE = '''
def _tree(vals, op):
    if len(vals) == 1:
        return vals[0]
    half = len(vals) // 2
    return op(_tree(vals[:half], op), _tree(vals[half:], op))
'''


def tree_source(op: str) -> str:
    # cuDNN's pairwise reduction over a row whose length the interpreter does not know: the
    # recursion on `len(vals) == 1` never folds.
    return helper_source(f"""\
row = [mA[n] for n in range(cute.size(mA, mode=[1]))]
total = _tree(row, {op})
cute.arch.mbarrier_arrive(bar)
""").replace("\n\nclass K:", PAIRWISE_TREE + "\n\nclass K:", 1)


def test_a_register_helper_recursing_through_a_plain_lambda_it_is_given_is_cut_not_reported():
    m = model(tree_source("lambda a, b: a + b"))
    assert not m.unmodeled, m.unmodeled
    assert [type(o).__name__ for o in ops(m, 0) if not isinstance(o, ir.Access)][-1] == "MbArrive"


def test_a_helper_recursing_through_a_lambda_that_synchronizes_is_reported():
    m = model(tree_source("lambda a, b: cute.arch.mbarrier_arrive(bar)"))
    assert "helper calls nested too deeply" in [u.why for u in m.unmodeled], m.unmodeled


def test_a_variable_bound_on_one_side_of_a_configuration_branch_keeps_its_value():
    m = model(kernel_source("""\
warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
smem = cutlass.utils.SmemAllocator()
if cutlass.const_expr(self.use_tma):
    bars = smem.allocate_array(cutlass.Int64, num_elems=2)
    if warp_idx == 0:
        cute.arch.mbarrier_init(bars, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
if cutlass.const_expr(self.use_tma):
    cute.arch.mbarrier_arrive(bars)
""", init="self.use_tma = use_tma\n").replace("def __init__(self):", "def __init__(self, use_tma):"))
    assert not m.unmodeled


def test_host_objects_stage_counts_and_cluster_extents_take_the_modeled_defaults():
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bars = smem.allocate_array(cutlass.Int64, num_elems=2 * self.config.smem_stages)
if cutlass.const_expr(self.cluster_n > 1):
    cute.arch.cluster_arrive()
""", init="self.config = config\n").replace("def __init__(self):", "def __init__(self, config):")
    src = src.replace("        self.kernel(mA).launch(", "        self.cluster_n = min(self.config.cluster_n, 8)\n        self.kernel(mA).launch(")
    m = model(src)
    assert not m.unmodeled
    assert any("self.config.smem_stages not foldable: assumed 2 stages" in a for a in m.assumptions)
    assert any("self.cluster_n not known: assumed 1" in a for a in m.assumptions)
    assert not any(isinstance(o, ir.ClusterArrive) for o in ops(m, 0))


def test_returns_under_nested_and_successive_runtime_conditions():
    src = helper_source("""\
r = pick(bar, mA[0], mA[1])
cute.arch.mbarrier_arrive(bar)
""").replace("@cute.jit\ndef reduce", '''@cute.jit
def pick(bar, a, b):
    if a > 0:
        if b > 0:
            return 1
        cute.arch.mbarrier_arrive(bar + 1)
    if b < 0:
        return 2
    cute.arch.mbarrier_arrive(bar + 2)
    return 3


@cute.jit
def reduce''')
    m = model(src)
    assert not m.unmodeled

    def paths(ops):
        """Every sequence of arrives through the choices."""
        out = [[]]
        for o in ops:
            if isinstance(o, ir.Choice):
                out = [p + q for p in out for alt in o.alternatives for q in paths(alt)]
            elif isinstance(o, ir.MbArrive):
                out = [p + [o.bar.name.split(" ")[0]] for p in out]
        return out

    got = sorted(map(tuple, paths(ops(m, 0))))
    # a>0,b>0: returns at once; a>0,b<=0: arrives on bar[1] then b<0 is false, bar[2];
    # a<=0: b<0 returns, else bar[2]; the caller's arrive follows on every path.
    assert set(got) == {("bar",), ("bar[1]", "bar[2]", "bar"), ("bar[2]", "bar")} | {("bar[1]", "bar")}


def test_register_helpers_run_once_per_abstract_arguments():
    src = helper_source("""\
acc, b = mA[0], mA[1]
for i in cutlass.range(60, unroll_full=True):
    for j in cutlass.range(60, unroll_full=True):
        acc = wide(acc, b)
cute.arch.mbarrier_arrive(bar)
""").replace("@cute.jit\ndef reduce", "@cute.jit\ndef wide(a, b):\n" + "    a = a * b + a\n" * 20
             + "    return a\n\n\n@cute.jit\ndef reduce")
    # 3600 calls of a 21-statement helper: far past the per-warp step limit if each call ran.
    m = model(src)
    assert not m.unmodeled


def test_a_recursive_helper_that_synchronizes_is_reported_not_cut():
    src = helper_source("""\
r = spin(bar, mA[0])
""").replace("@cute.jit\ndef reduce", '''@cute.jit
def spin(bar, v):
    if cutlass.const_expr(isinstance(v, cute.TensorSSA)):
        return spin(bar, v + 1)
    cute.arch.mbarrier_arrive(bar)
    return v


@cute.jit
def reduce''')
    m = model(src)
    assert [u.why for u in m.unmodeled] == ["helper calls nested too deeply"]


EXP2_METHOD = """\
@cute.jit
def _exp2f(self, x):
    if cutlass.const_expr(isinstance(x, cute.TensorSSA)):
        res = cute.make_rmem_tensor(x.shape, cutlass.Float32)
        res.store(x)
        for i in cutlass.range_constexpr(cute.size(x.shape)):
            res[i] = self._exp2f(res[i])
BODY
        return res.load()
    return cute.math.exp2(x, fastmath=True)
"""


def _exp2_kernel(body_line: str) -> str:
    # cuDNN's NSA selection kernel: a method of the kernel object calling itself per element
    # under `const_expr(isinstance(x, TensorSSA))`, which does not fold.
    return kernel_source("""\
smem = cutlass.utils.SmemAllocator()
bar = smem.allocate_array(cutlass.Int64, num_elems=1)
if cute.arch.thread_idx()[0] == 0:
    cute.arch.mbarrier_init(bar, 64)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
y = self._exp2f(mA[0])
cute.arch.mbarrier_arrive(bar)
""", extra_class=EXP2_METHOD.replace("BODY\n", body_line))


def test_a_method_recursing_per_element_that_only_computes_is_cut_not_reported():
    m = model(_exp2_kernel(""))
    assert not m.unmodeled
    assert kinds(ir.walk(ops(m, 0))).count("MbArrive") == 1


def test_a_recursing_method_that_sets_an_attribute_is_still_reported():
    m = model(_exp2_kernel("        self.calls = self.calls + 1\n"))
    assert [u.why for u in m.unmodeled] == ["helper calls nested too deeply"]


def test_a_helper_taking_a_dtype_or_a_tensor_recurses_once_on_isinstance_type():
    # flash-attn's `cvt_f16(src, dst_or_dtype)`: given a dtype it makes the tensor and calls
    # itself with it; `isinstance(x, type)` must fold both ways or the recursion never ends.
    src = helper_source("""\
sX = smem.allocate_tensor(cutlass.Float32, 64)
r = convert(bar, sX, cutlass.BFloat16)
""").replace("@cute.jit\ndef reduce", '''@cute.jit
def convert(bar, src, dst_or_dtype):
    if cutlass.const_expr(isinstance(dst_or_dtype, type)):
        dst = cute.make_rmem_tensor(src.shape, dst_or_dtype)
        convert(bar, src, dst)
        return dst
    else:
        assert not isinstance(dst_or_dtype, type)
        assert isinstance(dst_or_dtype, cute.Tensor) and isinstance(src, cute.Tensor)
        x = src[0]
        cute.arch.mbarrier_arrive(bar)


@cute.jit
def reduce''')
    m = model(src)
    assert not m.unmodeled
    assert kinds(ir.walk(ops(m, 0))).count("MbArrive") == 1


def test_a_per_warp_slice_of_a_stages_by_warps_buffer_is_staged_not_stage_warp():
    src = kernel_source("""\
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
smem = cutlass.utils.SmemAllocator()
sX = smem.allocate_tensor(cutlass.Float32, cute.make_ordered_layout((8, n, 2, 4), order=(0, 1, 2, 3)))
tXsX = sX[None, None, None, warp]
x = tXsX[None, None, 1].load()
""", params="n", init="self.num_stages = 2\n")
    m = model(src)
    names = {p.warp: [o.region.name for o in p.variants[0] if isinstance(o, ir.Access)] for p in m.processes}
    # Every warp reads stage 1 of its own slice (a region of its own), never "stage <warp>".
    assert names == {w: [f"sX[stage 1][slice {w}] (CTA 0)"] for w in range(2)}


REDUCE = """\
tidx, _, _ = cute.arch.thread_idx()
smem = cutlass.utils.SmemAllocator()
sRed = smem.allocate_tensor(cutlass.Float32, cute.make_layout({size}))
sRed[tidx] = mA[tidx]
cute.arch.sync_threads()
for off in (64, 32, 16, 8, 4, 2, 1):
    if tidx < off:
        sRed[tidx] = sRed[tidx] + sRed[tidx + off]
    {sync}
if tidx == 0:
    mA[0] = sRed[0]
"""


def test_a_tree_reduction_through_per_lane_indices_is_verified(require_spin):
    from cutespin import api
    settings = Settings().with_overrides(verify_fixes=False)
    for size in ("128", "self.n"):
        src = kernel_source(REDUCE.format(size=size, sync="cute.arch.sync_threads()"), threads=128,
                            init="self.n = n\n").replace("def __init__(self):", "def __init__(self, n):")
        m = model(src)
        names = {o.region.name for p in m.processes for o in ir.walk(p.variants[0]) if isinstance(o, ir.Access)
                 and o.region.name.startswith("sRed")}
        # 32-element blocks, and within block 0 the atoms of the tree (`sRed[0]`, `sRed[2:4]`, ...).
        assert {"sRed[0] (CTA 0)", "sRed[2:4] (CTA 0)", "sRed[96:128] (CTA 0)"} <= names, names
        r = api.check_source(src, "k.py", settings, with_fixes=False).kernels[0]
        assert r.verdict == "verified", (size, r.reason, [f.message for f in r.findings])
    # Through a pointer moved by a runtime amount, or a re-laid-out view, an index no longer names
    # an element: the whole buffer (every block) is touched.
    for view in ("cute.make_tensor(sRed.iterator + mA[0], cute.make_layout(128))",
                 "cute.make_tensor(sRed.iterator, cute.make_layout(128, stride=2))"):
        moved = kernel_source(REDUCE.format(size="256", sync="cute.arch.sync_threads()").replace(
            "sRed[tidx] = mA[tidx]\n", f"sRed[tidx] = mA[tidx]\nv = {view}\nv[tidx] = 1.0\n"), threads=128)
        touched = [o.region.name for p in model(moved).processes if p.warp == 0 for o in p.variants[0]
                   if isinstance(o, ir.Access) and o.span.line == line_of(moved, "v[tidx] = 1.0")]
        assert "sRed[96:128] (CTA 0)" in touched and "sRed[other elements] (CTA 0)" in touched, touched
    # Without the barrier inside the loop, warp 0 reads elements warp 1 is still writing.
    bad = kernel_source(REDUCE.format(size="128", sync="pass"), threads=128)
    r = api.check_source(bad, "k.py", settings, with_fixes=False).kernels[0]
    assert r.verdict == "counterexample" and r.findings[0].code == "CS201"


def test_register_math_on_unknown_values_is_skipped_only_when_everything_it_calls_is_plain():
    helpers = '''
@cute.jit
def rounds(x, y):
    for _ in range(100000):  # interpreted, this loop alone would be reported (MAX_UNROLL)
        x, y = mix(x, y)
    return x


@cute.jit
def mix(a, b):
    return a * b, a + b


@cute.jit
def arrive_and_mix(bar, a):
    return signal(a)


@cute.jit
def signal(a):
    cute.arch.mbarrier_arrive(a)
    return a
'''
    src = helper_source("""\
v = rounds(mA[0], mA[1])
w = arrive_and_mix(bar, bar)
""").replace("\n\nclass K:", helpers + "\n\nclass K:", 1)
    m = model(src)
    assert not m.unmodeled
    # `rounds` is skipped (nothing known in, only plain code called); `arrive_and_mix` is not:
    # the function it calls synchronizes.
    assert [o.bar.name.split(" ")[0] for o in ops(m, 0) if isinstance(o, ir.MbArrive)] == ["bar"]


def test_a_pointer_from_crd2idx_selects_the_stage_and_slice_of_the_coordinate():
    src = kernel_source("""\
warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
smem = cutlass.utils.SmemAllocator()
sX = smem.allocate_tensor(cutlass.Float32, cute.make_ordered_layout((8, n, 2, 4), order=(0, 1, 2, 3)))
p = sX.iterator + cute.crd2idx((0, 0, 1, warp), sX.layout)
x = cute.make_tensor(p, cute.make_layout(8)).load()
""", params="n", init="self.num_stages = 2\n")
    m = model(src)
    names = {p.warp: [o.region.name for o in p.variants[0] if isinstance(o, ir.Access)] for p in m.processes}
    assert names == {w: [f"sX[stage 1][slice {w}] (CTA 0)"] for w in range(2)}


# ---------------------------------------------------------------- comprehensions

REDUCE_HELPER = """\
@cute.jit
def block_sum(val, sRed):
    sRed[cute.arch.thread_idx()[0]] = val
    cute.arch.sync_threads()
    return sRed[0]
"""


def _with_helper(body: str) -> str:
    return REDUCE_HELPER + "\n\n" + kernel_source(body, threads=64)


def _syncs(m, warp):
    return [op for op in ir.walk(ops(m, warp)) if isinstance(op, ir.NamedBarrier)]


def test_a_generator_expression_runs_its_calls_once_per_element():
    m = model(_with_helper("""\
        smem = cutlass.utils.SmemAllocator()
        sRed = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
        vals = (cutlass.Float32(1.0), cutlass.Float32(2.0))
        sums = tuple(block_sum(v, sRed) for v in vals)
        """))
    assert len(_syncs(m, 0)) == 2 and len(_syncs(m, 1)) == 2
    assert m.unmodeled == []


def test_a_list_comprehension_with_a_folded_filter_runs_the_kept_elements():
    m = model(_with_helper("""\
        smem = cutlass.utils.SmemAllocator()
        sRed = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
        sums = [block_sum(cutlass.Float32(i), sRed) for i in range(4) if i % 2 == 0]
        """))
    assert len(_syncs(m, 0)) == 2


def test_a_synchronizing_comprehension_whose_filter_does_not_fold_is_unmodeled():
    src = _with_helper("""\
        smem = cutlass.utils.SmemAllocator()
        sRed = smem.allocate_tensor(cutlass.Float32, cute.make_layout(64))
        sums = [block_sum(mA[i], sRed) for i in range(2) if mA[i] > 0]
        """)
    m = model(src)
    assert [(u.line, u.construct) for u in m.unmodeled] == [(line_of(src, "sums = ["), "comprehension")]


def test_comprehension_variables_do_not_leak():
    m = model(kernel_source("""\
        i = 7
        xs = [i * 2 for i in range(3)]
        if i == 7 and xs == (0, 2, 4):
            cute.arch.sync_threads()
        """, threads=64))
    assert len(_syncs(m, 0)) == 1


COLUMNS = """\
tidx, _, _ = cute.arch.thread_idx()
smem = cutlass.utils.SmemAllocator()
sSeg = smem.allocate_tensor(cutlass.Int32, cute.make_layout((4, {cols}), stride=({cols}, 1)))
for row in cutlass.range_constexpr(4):
    sSeg[row, tidx] = mA[row * 128 + tidx]
{sync}
if tidx < {cols}:
    count = 0
    for row in cutlass.range_constexpr(4):
        seen = sSeg[row, {col}]
        sSeg[row, {col}] = count
        count += seen
"""


def test_a_matrix_indexed_by_column_per_lane_splits_into_column_blocks(require_spin):
    # Each thread scans its own column of a (rows, E) matrix (E a host value): warps touch
    # different columns, so a warp's rescan does not race with another warp's.
    from cutespin import api
    settings = Settings().with_overrides(verify_fixes=False)
    src = kernel_source(COLUMNS.format(cols="self.n", col="tidx", sync="cute.arch.sync_threads()"),
                        threads=128, init="self.n = n\n").replace("def __init__(self):", "def __init__(self, n):")
    m = model(src)
    names = {o.region.name for p in m.processes for o in ir.walk(p.variants[0]) if isinstance(o, ir.Access)}
    assert "sSeg[0, 96:128] (CTA 0)" in names  # row 0, the last warp's columns
    r = api.check_source(src, "k.py", settings, with_fixes=False).kernels[0]
    assert r.verdict == "verified", (r.reason, [f.message for f in r.findings])
    # Reading the next warp's column without a barrier after its writes is a race.
    bad = kernel_source(COLUMNS.format(cols="128", col="(tidx + 32) % 128", sync=""), threads=128)
    r = api.check_source(bad, "k.py", settings, with_fixes=False).kernels[0]
    assert r.verdict == "counterexample" and r.findings[0].code == "CS201"


def test_a_matrix_with_unknown_strides_is_not_split():
    src = kernel_source(COLUMNS.format(cols="self.n", col="tidx", sync="cute.arch.sync_threads()").replace(
        "stride=({cols}, 1)".format(cols="self.n"), "stride=(self.s, 1)"), threads=128,
        init="self.n = n\nself.s = s\n").replace("def __init__(self):", "def __init__(self, n, s):")
    names = {o.region.name for p in model(src).processes for o in ir.walk(p.variants[0]) if isinstance(o, ir.Access)
             and o.region.name.startswith("sSeg")}
    assert names == {"sSeg (CTA 0)"}


def test_buffer_counts_are_stage_counts_so_their_parity_folds():
    # dist-moe: `buf, phase = accum % NUM_SMEM_BUFFERS, (accum // NUM_SMEM_BUFFERS) & 1` with
    # the count from a config the front end cannot fold.
    src = kernel_source("""\
smem = cutlass.utils.SmemAllocator()
full = smem.allocate_array(cutlass.Int64, num_elems=self.NUM_SMEM_BUFFERS)
if cute.arch.warp_idx() == 0:
    cute.arch.mbarrier_init(full, 1)
cute.arch.mbarrier_init_fence()
cute.arch.sync_threads()
for k in cutlass.range(3, unroll=1):
    buf = k % self.NUM_SMEM_BUFFERS
    phase = (k // self.NUM_SMEM_BUFFERS) & 1
    if cute.arch.warp_idx() == 0:
        cute.arch.mbarrier_arrive(full + buf)
    cute.arch.mbarrier_wait(full + buf, phase)
""", init="self.NUM_SMEM_BUFFERS = config['NUM_SMEM_BUFFERS']\n").replace(
        "def __init__(self):", "def __init__(self, config):")
    m = model(src)
    assert not m.unmodeled
    assert any("self.NUM_SMEM_BUFFERS not foldable: assumed 2 stages" in a for a in m.assumptions)
    waits = [o for o in ops(m, 1) if isinstance(o, ir.MbWait)]
    assert [w.parity for w in waits] == [0, 0, 1]


def test_an_exit_in_the_kernel_body_ends_the_threads_on_that_side():
    # cudnn-frontend: `if total_token <= 0: cute.arch.nvvm.exit()` before the roles start.
    src = kernel_source("""\
if mA.shape[0] <= 0:
    cute.arch.nvvm.exit()
cute.arch.sync_threads()
""")
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    [choice] = [o for o in ops(m, 0) if isinstance(o, ir.Choice)]
    exited, going_on = choice.alternatives
    assert not exited and [o for o in going_on if isinstance(o, ir.NamedBarrier)]


def test_an_exit_inside_a_helper_ends_the_thread_and_cuts_the_callers_code():
    # frost's `steep_exit_unless_flagged`: `if flag[0] == 0: nvvm.exit()` in a helper called at
    # kernel entry. On the exiting side nothing after the call runs, in the helper or its caller.
    src = kernel_source("""\
self.leave(mA)
cute.arch.sync_threads()
""", extra_class='''
@cute.jit
def leave(self, flag):
    if flag[0] == 0:
        cute.arch.nvvm.exit()
    cute.arch.fence_acq_rel_cta()
''')
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    [choice] = [o for o in ops(m, 0) if isinstance(o, ir.Choice)]
    exited, going_on = choice.alternatives
    assert [type(o).__name__ for o in exited] == []
    # The helper's rest and the caller's barrier run on the other side only.
    assert [type(o).__name__ for o in going_on] == ["Fence", "NamedBarrier"]
    assert not [o for o in ops(m, 0) if isinstance(o, ir.NamedBarrier)]  # none outside the choice


def test_an_exit_on_every_path_of_a_helper_ends_the_caller_too():
    src = kernel_source("""\
if mA[0] > 0:
    self.leave()
    cute.arch.sync_threads()
cute.arch.fence_acq_rel_cta()
""", extra_class='''
@cute.jit
def leave(self):
    cute.arch.nvvm.exit()
''')
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    [choice] = [o for o in ops(m, 0) if isinstance(o, ir.Choice)]
    assert [[type(o).__name__ for o in alt] for alt in choice.alternatives] == [[], ["Fence"]]


def test_a_trap_drops_the_paths_that_reach_it_and_says_so():
    # cuDNN's fail-closed index checks: `inline_ptx("trap;", predicate=slot >= n)`.
    src = kernel_source("""\
tidx, _, _ = cute.arch.thread_idx()
if tidx == 0:
    cute.arch.inline_ptx("trap;", predicate=mA[0] >= 4)
    mA[1] = 0
cute.arch.sync_threads()
""").replace("import cutlass.cute as cute", "import cutlass.cute as cute\nfrom cutlass.cute.arch import inline_ptx")
    m = model(src)
    assert not m.unmodeled, m.unmodeled
    assert any("`trap` at line" in a and "not checked" in a for a in m.assumptions), m.assumptions
    assert [o for o in ops(m, 0) if isinstance(o, ir.NamedBarrier)]


def test_a_library_helper_handed_a_pipeline_is_unmodeled_not_pure():
    # cutlass's `utils.gemm.sm100.epilogue(self, ..., acc_consumer_state, acc_pipeline)` waits on
    # and releases the accumulator pipeline; `utils.` helpers are otherwise layout arithmetic.
    src = kernel_source(async_pipeline("acc_pipeline") + """\
state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
state = cutlass.utils.gemm.sm100.epilogue(self, state, acc_pipeline)
layout = cutlass.utils.sm100.make_smem_layout_a(mA, 4)
""")
    m = model(src)
    assert [(u.construct, u.why) for u in m.unmodeled] == [
        ("utils.gemm.sm100.epilogue", "call receives a pipeline, pipeline state or barrier")]


def test_host_attributes_derived_from_a_defaulted_stage_count_agree_with_it():
    # CUTLASS's block-scaled GEMMs: `self.num_acc_stage, ... = self._compute_stages(...)` does not
    # fold, then `self.overlapping_accum = self.num_acc_stage == 1`. The stage count takes the
    # default where it is assigned, so the derived flag folds with it instead of being a free
    # choice that contradicts the buffers' two stages.
    src = kernel_source("""\
if cutlass.const_expr(self.overlapping_accum):
    cute.arch.sync_threads()
""", init="self._setup()", extra_class='''
def _setup(self):
    self.num_acc_stage, self.num_c_stage = self._compute_stages(smem_capacity_from_host())
    self.overlapping_accum = self.num_acc_stage == 1
''')
    src = src.replace("        self.kernel(mA).launch(", "        self._setup()\n        self.kernel(mA).launch(")
    m = model(src)
    assert not m.unmodeled
    assert not [o for o in ops(m, 0) if isinstance(o, (ir.Choice, ir.NamedBarrier))]
    assert any("self.num_acc_stage" in a and "assumed 2 stages" in a for a in m.assumptions)


def test_a_method_of_an_unknown_object_handed_a_pipeline_state_is_unmodeled():
    # cutlass EFC: `self.efc.kernel.load_tensor_subtiles(subtile_idx, c_pipeline, state)`.
    src = kernel_source(async_pipeline("c_pipeline") + """\
state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2)
self.efc.kernel.load_tensor_subtiles(0, c_pipeline, state)
""", init="self.efc = efc_from_host()")
    m = model(src)
    assert [u.construct for u in m.unmodeled] == [".load_tensor_subtiles(...)"]


def test_a_view_whose_last_mode_pads_the_stages_with_a_unit_mode_selects_a_stage():
    # cuDNN's block-sparse backward re-views its dQ staging buffer with a last mode `(1, 2)`: a
    # flat index into that mode is the stage, so the TMA store reads that stage only.
    src = kernel_source(INIT_BAR + """\
sA = smem.allocate_tensor(cutlass.Float16, cute.make_layout((64, 32, self.stages)), byte_alignment=128)
sB = smem.allocate_tensor(mA.element_type, cute.make_layout(4096), byte_alignment=128)
view = cute.make_tensor(sB.iterator, cute.make_layout(((8, 8), 2, 16, (1, 2)), stride=((16, 128), 1024, 1, (0, 2048))))
if warp_idx == 0:
    cute.copy(tma_atom, mA, sA[None, None, 1], tma_bar_ptr=bar + 1)
    cute.copy(tma_atom, view[None, 0, None, 1], mA)
    cute.arch.cp_async_bulk_commit_group()
    cute.arch.cp_async_bulk_wait_group(0, read=True)
""", init="self.stages = 2\n")
    src = src.replace("def kernel(self, mA: cute.Tensor):", "def kernel(self, mA: cute.Tensor, tma_atom: cute.CopyAtom):")
    store = next(x for x in ops(model(src), 0) if isinstance(x, ir.TmaStore))
    assert store.region.name.startswith("sB[stage 1]"), store.region.name
