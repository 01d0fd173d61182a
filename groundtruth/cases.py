"""Concrete inputs and NumPy references for every sample that Hopper (sm_90a) can run.

A case says how to build the sample's class, which arguments its ``@cute.jit`` entry takes (arrays
by name, scalars, Constexpr values, the stream), which arrays the kernel writes and what they must
hold afterwards. Everything here is NumPy: the device runner turns arrays into CUDA tensors, the
CPU tests compile against them. Samples without a case are reported as "no case" by the runner.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

F32, F16, I32 = np.float32, np.float16, np.int32


@dataclass
class Case:
    cls: str  # class in the sample module
    build: Callable  # (rng, small: bool) -> {name: ndarray}; outputs already hold NaN / 0
    args: list  # "name" | ("f32", v) | ("i32", v) | ("constexpr", v) | "stream"
    outputs: list  # arrays the kernel writes (reset to their initial value before each launch)
    ref: Callable  # (arrays) -> {name: expected ndarray}
    rtol: float = 1e-5
    atol: float = 1e-5
    note: str = ""
    extra: dict = field(default_factory=dict)


def _nan(shape, dt=F32):
    return np.full(shape, np.nan, dt)


def _randn(rng, shape, dt=F32):
    return rng.standard_normal(shape).astype(dt)


# ---- handoffs -------------------------------------------------------------------------------

def _handoff(rng, small):
    rows = 8 if small else 132
    return {"x": _randn(rng, (rows, 32)), "y": _nan((rows, 32))}


HANDOFF = dict(cls="ScaleHandoff", build=_handoff, args=["x", "y", ("f32", 2.0), "stream"], outputs=["y"],
               ref=lambda a: {"y": a["x"][:, ::-1] * F32(2.0)})


def _staged(rng, small):
    rows = 8 if small else 64
    return {"x": _randn(rng, (rows, 32)), "y": _nan((rows, 32))}


STAGED = dict(cls="StagedScale", build=_staged, args=["x", "y", ("i32_len", "x", 0)], outputs=["y"],
              ref=lambda a: {"y": a["x"] * F32(2.0)})


# ---- GMEM flag ------------------------------------------------------------------------------

def _flag(rng, small):
    return {"src": _randn(rng, (128,)), "data": _nan((128,)), "flag": np.zeros((1,), I32),
            "out": _nan((128,))}


FLAG = dict(cls="FlagHandoff", build=_flag, args=["src", "data", "flag", "out", "stream"],
            outputs=["data", "flag", "out"],
            ref=lambda a: {"data": a["src"] * F32(2.0), "out": a["src"] * F32(2.0) + F32(1.0),
                           "flag": np.ones((1,), I32)})


# ---- clusters / DSMEM -----------------------------------------------------------------------

def _jacobi(rng, small):
    return {"u_in": _randn(rng, (8, 32)), "u_out": _nan((8, 32))}


JACOBI_ITERS = 7


def _jacobi_ref(a):
    u = a["u_in"].astype(np.float64)
    for _ in range(JACOBI_ITERS):
        up = np.concatenate([u[:1], u[:-1]])  # row i-1, zero flux at row 0
        down = np.concatenate([u[1:], u[-1:]])  # row i+1, zero flux at row 7
        left = np.roll(u, 1, axis=1)
        right = np.roll(u, -1, axis=1)
        u = 0.25 * (up + down + left + right)
    return {"u_out": u.astype(F32)}


JACOBI = dict(cls="ClusterJacobi", build=_jacobi, args=["u_in", "u_out", ("i32", JACOBI_ITERS), "stream"],
              outputs=["u_out"], ref=_jacobi_ref, rtol=1e-5, atol=1e-5)


def _pair(rng, small):
    pairs = 4 if small else 4096  # many clusters: exited CTAs' shared memory gets reused
    return {"x": _randn(rng, (2 * pairs, 64)), "out": _nan((pairs, 64))}


PAIR = dict(cls="ClusterPairSum", build=_pair, args=["x", "out", "stream"], outputs=["out"],
            ref=lambda a: {"out": a["x"][0::2] + a["x"][1::2]})


# ---- named barrier --------------------------------------------------------------------------

def _weighted(rng, small):
    rows = 4 if small else 32
    return {"w": _randn(rng, (96,)), "x": _randn(rng, (rows, 96)), "y": _nan((rows, 32))}


def _weighted_ref(a):
    p = (a["w"][None, :] * a["x"]).reshape(-1, 3, 32)
    return {"y": p[:, 0] + p[:, 1] + p[:, 2]}


WEIGHTED = dict(cls="WeightedLaneSums", build=_weighted, args=["w", "x", "y", "stream"], outputs=["y"],
                ref=_weighted_ref)


# ---- raw mbarrier ring ----------------------------------------------------------------------

def _squares(rng, small):
    return {"a": _randn(rng, (8, 10, 32)), "b": _nan((8, 32))}


SQUARES = dict(cls="SquareSumRing", build=_squares, args=["a", "b", ("constexpr", 3), "stream"], outputs=["b"],
               ref=lambda a: {"b": np.roll(a["a"] ** 2, -1, axis=2).sum(axis=1)}, rtol=1e-4, atol=1e-4)


# ---- TMA rings ------------------------------------------------------------------------------

def _rowsum(rows):
    def build(rng, small):
        # K = 512: 8 tiles of 64, i.e. two laps of a 4-stage ring and four of a 2-stage one.
        return {"a": _randn(rng, (rows, 512), F16), "out": _nan((rows,))}
    return build


def _rowsum_ref(a):
    return {"out": a["a"].astype(np.float64).sum(axis=1).astype(F32)}


ROWSUM = dict(cls="RowSumTmaRing", build=_rowsum(128), args=["a", "out", "stream"], outputs=["out"],
              ref=_rowsum_ref, rtol=1e-3, atol=2e-2)
ROWSUM3 = dict(cls="RowSumTmaRing3", build=_rowsum(192), args=["a", "out", "stream"], outputs=["out"],
               ref=_rowsum_ref, rtol=1e-3, atol=2e-2)
PIPE_ROWSUM = dict(cls="PipelinedRowSum", build=_rowsum(128), args=["a", "out"], outputs=["out"],
                   ref=_rowsum_ref, rtol=1e-3, atol=2e-2)


def _weighted_tma(rng, small):
    return {"a": _randn(rng, (128, 512), F16), "w": _randn(rng, (64, 64), F16), "out": _nan((128,))}


def _weighted_tma_ref(a):
    A = a["a"].astype(np.float64)
    W = np.tile(a["w"].astype(np.float64), (2, 8))  # W[m % 64, k % 64]
    return {"out": (A * W).sum(axis=1).astype(F32)}


WEIGHTED_TMA = dict(cls="WeightedRowSumTma", build=_weighted_tma, args=["a", "w", "out", "stream"],
                    outputs=["out"], ref=_weighted_tma_ref, rtol=1e-3, atol=2e-2)


# ---- TMA store ------------------------------------------------------------------------------

def _tma_store(rng, small):
    n = 128 if small else 1024
    return {"a": _randn(rng, (n, n), F16), "c": _nan((n, n), F16)}


TMA_STORE = dict(cls="ScaleTmaStore", build=_tma_store, args=["a", "c", ("f32", 0.5), "stream"], outputs=["c"],
                 ref=lambda a: {"c": (a["a"].astype(F32) * F32(0.5)).astype(F16)}, rtol=0.0, atol=0.0)


CASES = {
    "cluster_exit_peer_arrive": Case(**PAIR),
    "dsmem_jacobi_exit": Case(**JACOBI),
    "dsmem_jacobi_ok": Case(**JACOBI),
    "dsmem_jacobi_scope": Case(**JACOBI),
    "elected_handoff_fix_all_lanes": Case(**HANDOFF),
    "elected_handoff_fix_syncwarp": Case(**HANDOFF),
    "elected_handoff_race": Case(**HANDOFF),
    "gmem_flag_ok": Case(**FLAG),
    "gmem_flag_scope": Case(**FLAG),
    "host_stages_pinned": Case(**SQUARES),
    "named_barrier_mismatch": Case(**WEIGHTED),
    "pipeline_async_handles_ok": Case(**STAGED),
    "pipeline_async_handles_race": Case(**STAGED),
    "pipeline_tma_consumer_count": Case(**PIPE_ROWSUM),
    "pipeline_tma_ok": Case(**PIPE_ROWSUM),
    "tma_bytes_never_complete": Case(**WEIGHTED_TMA),
    "tma_ring_ok": Case(**ROWSUM),
    "tma_ring_wrap_parity": Case(**ROWSUM),
    "tma_store_no_fence": Case(**TMA_STORE),
    "tma_store_ok": Case(**TMA_STORE),
    "wrong_arrive_count": Case(**ROWSUM3),
}


def case_for(sample: str):
    """The case of a sample or of a steered copy of it (``<sample>__<variant>``)."""
    return CASES.get(sample.split("__")[0])
