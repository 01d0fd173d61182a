"""GPU driver for the corpus counterexample CS201 in flash-attn-4 4.0.0b36's
`flash_attn/cute/compute_block_sparsity.py` (`BlockSparsityKernel.kernel`, line 289).

It imports the *installed* package (nothing of it is copied here), calls its host entry point
`compute_block_sparsity(...)` with `use_fast_sampling=False` (the path with the shared
`reduction_buffer`), and checks the block counts and indices against a torch reference.

    python3 groundtruth/corpus_block_sparsity.py --config small          # a few launches
    python3 groundtruth/corpus_block_sparsity.py --config stress --reps 200
    compute-sanitizer --tool racecheck --racecheck-report all \
        python3 groundtruth/corpus_block_sparsity.py --config small

Configs (all masks are defined here, none carries a `use_fast_sampling` attribute):
  small   causal and a one-warp alternating mask, a few n-blocks per row, 1 launch each;
          small enough to run under racecheck.
  stress  many blocks of 1024 threads (32 warps), tile_n = 1 (the n_block loop is thousands of
          iterations with almost no work between a warp's barrier and its next write) and a
          mask whose only unmasked warp alternates each iteration, so a stale/early value read
          by warp 0 changes the output. Repeated --reps times; any mismatch is counted.

--compile-only (no GPU needed): compiles each kernel on CPU tensors without launching
(the package's fake-mode path), to check the driver before spending device time.

Exit status 0 when every launch matched the reference, 1 otherwise.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import cutlass
import cutlass.cute as cute

import flash_attn.cute.compute_block_sparsity as cbs
from flash_attn.cute import utils as fa_utils


# ---- mask_mods: (batch, head, q_idx, kv_idx, seqlen_info, aux_tensors) -> TensorSSA(bool) ----

@cute.jit
def causal_mask(b, h, q_idx, kv_idx, seqlen_info, aux_tensors):
    # bottom-right aligned causal: kv <= q + (seqlen_k - seqlen_q)
    off = fa_utils.scalar_to_ssa(seqlen_info.seqlen_k - seqlen_info.seqlen_q, cutlass.Int32)
    return kv_idx <= q_idx + off


@cute.jit
def last_warp_even_kv_mask(b, h, q_idx, kv_idx, seqlen_info, aux_tensors):
    # True only for rows of warp 31 of a 1024-row tile and even kv columns.
    q = q_idx[0]
    kv = kv_idx[0]
    keep = cutlass.Boolean(((q >> 5) & 31) == 31) & cutlass.Boolean((kv & 1) == 0)
    return fa_utils.scalar_to_ssa(keep, cutlass.Boolean)


def ref_causal(sq, sk, dev):
    q = torch.arange(sq, device=dev)[:, None]
    k = torch.arange(sk, device=dev)[None, :]
    return k <= q + (sk - sq)


def ref_last_warp_even_kv(sq, sk, dev):
    q = torch.arange(sq, device=dev)[:, None]
    k = torch.arange(sk, device=dev)[None, :]
    return (((q >> 5) & 31) == 31) & ((k & 1) == 0)


MASKS = {
    "causal": (causal_mask, ref_causal),
    "lastwarp": (last_warp_even_kv_mask, ref_last_warp_even_kv),
}

# name, mask, batch, heads, seqlen_q, seqlen_k, tile_m, tile_n
CONFIGS = {
    "small": [
        ("causal-128x128", "causal", 1, 2, 512, 512, 128, 128),        # 4 warps, 4 n-blocks
        ("causal-128x32-ragged", "causal", 1, 1, 300, 333, 128, 32),   # boundary m and n blocks
        ("lastwarp-1024x1", "lastwarp", 1, 1, 1024, 64, 1024, 1),      # 32 warps, 64 n-blocks
    ],
    "stress": [
        ("lastwarp-1024x1", "lastwarp", 4, 33, 2048, 4096, 1024, 1),   # 264 CTAs x 4096 iters
        ("causal-128x8", "causal", 4, 16, 2048, 2048, 128, 8),         # 1024 CTAs x 256 iters
    ],
}


def reference(dense, b, h, sq, sk, tm, tn):
    """Per (m_block, n_block): partial = some kept and some masked, full = all kept."""
    mb, nb = -(-sq // tm), -(-sk // tn)
    pad = torch.zeros(mb * tm, nb * tn, dtype=torch.int8, device=dense.device)
    valid = torch.zeros_like(pad)
    pad[:sq, :sk] = dense.to(torch.int8)
    valid[:sq, :sk] = 1
    kept = pad.view(mb, tm, nb, tn).sum(dim=(1, 3))
    n_valid = valid.view(mb, tm, nb, tn).sum(dim=(1, 3))
    partial = (kept > 0) & (kept < n_valid)
    full = (kept > 0) & (kept == n_valid)
    return partial, full


def to_dense_bits(cnt, idx, nb):
    """cnt [B,H,M], idx [B,H,M,N] (first cnt entries valid) -> [B,H,M,N] bool, plus order ok."""
    B, H, M, N = idx.shape
    col = torch.arange(N, device=idx.device)
    valid = col[None, None, None, :] < cnt[..., None]
    dense = torch.zeros(B, H, M, nb + 1, dtype=torch.bool, device=idx.device)
    safe = torch.where(valid, idx.long(), nb)
    dense.scatter_(3, safe, True)
    # indices must be strictly increasing where valid (the kernel appends n_block in order)
    inc = (idx[..., 1:] > idx[..., :-1]) | ~valid[..., 1:]
    return dense[..., :nb], bool(inc.all())


def run_config(cfg, dev, compile_only=False, reps=1):
    name, mname, B, H, sq, sk, tm, tn = cfg
    mask_mod, ref_fn = MASKS[mname]
    assert not hasattr(mask_mod, "use_fast_sampling")
    nb = -(-sk // tn)
    partial, full = reference(ref_fn(sq, sk, dev), B, H, sq, sk, tm, tn)
    bad = 0
    t0 = time.time()
    for r in range(reps):
        out = cbs.compute_block_sparsity(
            tm, tn, B, H, sq, sk, mask_mod, None, dev, use_fast_sampling=False
        )
        if compile_only:
            print(f"{name}: compiled ({time.time() - t0:.1f}s)", flush=True)
            return 0
        torch.cuda.synchronize()
        got_p, ok_p = to_dense_bits(out.mask_block_cnt, out.mask_block_idx, nb)
        got_f, ok_f = to_dense_bits(out.full_block_cnt, out.full_block_idx, nb)
        exp_p = partial.expand(B, H, -1, -1)
        exp_f = full.expand(B, H, -1, -1)
        wrong = int((got_p != exp_p).sum()) + int((got_f != exp_f).sum())
        if wrong or not ok_p or not ok_f:
            bad += 1
            if bad <= 5:
                rows = ((got_p != exp_p) | (got_f != exp_f)).any(-1).nonzero()[:5].tolist()
                print(f"  {name} rep {r}: {wrong} wrong block flags, order ok {ok_p and ok_f}, "
                      f"first (b,h,m): {rows}", flush=True)
        if r == 0:
            print(f"{name}: first launch ok={not bad} (compile+run {time.time() - t0:.1f}s); "
                  f"partial blocks {int(exp_p.sum())}, full blocks {int(exp_f.sum())}", flush=True)
    print(f"{name}: {reps} launches, {bad} mismatching ({time.time() - t0:.1f}s)", flush=True)
    return bad


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", choices=sorted(CONFIGS), default="small")
    ap.add_argument("--only", default="", help="comma-separated config names")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args(argv)

    import importlib.metadata as md
    vers = {p: md.version(p) for p in ("flash-attn-4", "nvidia-cutlass-dsl", "quack-kernels",
                                        "apache-tvm-ffi", "torch")}
    print("versions:", vers, flush=True)
    if args.compile_only:
        os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
        cbs.is_fake_mode = lambda: True  # compile, never launch
        dev = "cpu"
    else:
        dev = "cuda"
        print("device:", torch.cuda.get_device_name(0), flush=True)
    bad = 0
    for cfg in CONFIGS[args.config]:
        if args.only and cfg[0] not in args.only.split(","):
            continue
        bad += run_config(cfg, dev, args.compile_only, args.reps)
    print("TOTAL mismatching launches:", bad, flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
