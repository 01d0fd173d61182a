"""Each fix's edit, its re-verified verdict, and the patched file checked from scratch."""
import pytest

from cutespin import api
from cutespin.config import Settings, settings_for_path
from cutespin.fixes.source import apply_edits

from ..conftest import SAMPLES

# sample, code, title fragment, (edit line, new text fragment) of the first edit, verified
CASES = [
    ("elected_handoff_race.py", "CS201", "sync_warp() before the elected arrive", (63, "cute.arch.sync_warp()"), True),
    ("elected_handoff_race.py", "CS201", "Make all 32 lanes arrive", (63, "cute.arch.mbarrier_arrive(ready)"), True),
    ("gmem_flag_scope.py", "CS401", "Raise the scope to gpu", (57, '"gpu"'), True),
    ("dsmem_jacobi_scope.py", "CS401", "Raise the scope to cluster", (103, "scope=nvvm.MemScopeKind.CLUSTER"), True),
    ("tma_store_no_fence.py", "CS501", "fence_view_async_shared()", (94, "cute.arch.fence_view_async_shared()"), True),
    ("named_barrier_mismatch.py", "CS101", "thread count to 96", (58, "96"), True),
    ("wrong_arrive_count.py", "CS201", "expected arrival count of empty_bar to 96", (75, "96"), True),
    ("tma_bytes_never_complete.py", "CS101", "Expect 8192 transaction bytes", (128, "8192"), True),
    ("tma_bytes_never_complete.py", "CS101", "Wait on the other parity", (143, "1 - phase"), False),
    ("tma_ring_wrap_parity.py", "CS101", "Flip `phase` when the stage index wraps", (120, "phase ^= 1"), True),
    ("dsmem_jacobi_exit.py", "CS701", "trailing cluster barrier", (142, "cute.arch.cluster_arrive()"), True),
    ("cluster_exit_peer_arrive.py", "CS701", "trailing cluster barrier", (69, "cute.arch.cluster_wait()"), True),
    ("pipeline_tma_consumer_count.py", "CS101", "Size the pipeline's consumer group to 2", (62, "2"), True),
    ("pipeline_async_handles_race.py", "CS201", "sync_warp() before the elected arrive", (51, "cute.arch.sync_warp()"), True),
    ("pipeline_async_handles_race.py", "CS201", "Make all 32 lanes commit", (51, "handle.commit()"), True),
    ("cp_async_no_barrier.py", "CS201", "sync_threads() after cp_async_wait_group", (72, "cute.arch.sync_threads()"), True),
    ("cp_async_no_barrier.py", "CS201", "Wait for one more cp.async group", (71, "self.stages - 2 - 1"), False),
    ("cp_async_wait_too_shallow.py", "CS201", "Wait for one more cp.async group", (70, "self.stages - 1 - 1"), True),
    ("wgmma_release_early.py", "CS201", "warpgroup.wait_group(0) before releasing",
     (106, "cute.nvgpu.warpgroup.wait_group(0)"), True),
    # The fence goes before the `with cute.arch.elect_one():` that releases (tcgen05.wait::ld is
    # warp-collective), not inside it.
    ("tmem_load_release_before_fence.py", "CS201", "fence_view_async_tmem_load() before releasing",
     (99, "cute.arch.fence_view_async_tmem_load()"), True),
    # The MMA warp's ring released by a plain arrive: its UMMA variant releases with tcgen05.commit.
    ("umma_release_plain_arrive.py", "CS201", "Create the ring as PipelineTmaUmma", (49, "PipelineTmaUmma"), True),
]

_cache = {}


def checked(name):
    if name not in _cache:
        path = SAMPLES / name
        text = path.read_text()
        settings = settings_for_path(path, Settings())
        _cache[name] = (text, settings, api.check_source(text, str(path), settings))
    return _cache[name]


@pytest.mark.parametrize("sample,code,title,first_edit,verified", CASES, ids=[f"{c[0]}:{c[2][:24]}" for c in CASES])
def test_fix_edit_and_verdict(sample, code, title, first_edit, verified, require_spin):
    text, settings, fr = checked(sample)
    findings = [f for k in fr.kernels for f in k.findings if f.code == code]
    assert findings, f"no {code} finding in {sample}"
    fixes = [x for f in findings for x in f.fixes if title in x.title]
    assert len(fixes) == 1, [x.title for f in findings for x in f.fixes]
    fix = fixes[0]
    line, fragment = first_edit
    assert fix.edits[0].span.line == line
    assert fragment in fix.edits[0].new_text
    assert fix.verified is verified
    # The patched file, checked from scratch, agrees with the fix's verdict.
    patched = apply_edits(text, fix.edits)
    again = api.check_source(patched, str(SAMPLES / sample), settings, with_fixes=False)
    verdicts = {k.verdict for k in again.kernels}
    assert (verdicts == {"verified"}) is verified


def test_verified_fixes_come_first_and_one_is_preferred(require_spin):
    _, _, fr = checked("tma_bytes_never_complete.py")
    fixes = fr.kernels[0].findings[0].fixes
    assert [x.verified for x in fixes] == sorted([x.verified for x in fixes], reverse=True)
    assert sum(x.preferred for x in fixes) == 1 and fixes[0].preferred


def test_lane_release_fixes_are_only_offered_for_writes_of_the_racing_buffer(require_spin):
    # The MMA reads sA before the TMA load into it is waited for. Warp 0's elected lane arrives
    # after its lanes wrote the TMEM holder, another buffer: `sync_warp()` before that arrive is
    # no fix for this race and is not proposed.
    _, _, fr = checked("umma_mma_before_wait.py")
    (finding,) = fr.kernels[0].findings
    assert not [x.title for x in finding.fixes if "sync_warp" in x.title or "lanes arrive" in x.title]


def test_apply_edits_handles_insertions_and_replacements_in_any_order():
    from cutespin.findings import Edit
    from cutespin.ir import Span
    text = "a = 1\nb = 2\n"
    edits = [Edit("f", Span(2, 5, 2, 6), "3"), Edit("f", Span(1, 1, 1, 1), "# head\n")]
    assert apply_edits(text, edits) == "# head\na = 1\nb = 3\n"
