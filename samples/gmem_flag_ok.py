# cutespin-expect: kernel=FlagHandoff.kernel verdict=verified
"""Cross-CTA handoff through global memory with a release/acquire flag (no cluster).

CTA 0 computes a 128-element block into ``mData`` and then raises ``mFlag`` (zeroed by the host
before the launch) with a release reduction at GPU scope; CTA 1 spins on the flag with acquire
loads at GPU scope and then consumes ``mData``. The CTA barrier on each side extends the single
thread's release/acquire to the whole CTA. Both CTAs of the 2-CTA grid are co-resident, so the
spin cannot starve the producer.

Expected: correct.
"""

import cuda.bindings.driver as cuda

import cutlass
import cutlass.cute as cute


class FlagHandoff:
    def __init__(self):
        self.threads = 128

    @cute.jit
    def __call__(
        self,
        mSrc: cute.Tensor,
        mData: cute.Tensor,
        mFlag: cute.Tensor,
        mOut: cute.Tensor,
        stream: cuda.CUstream,
    ):
        # mSrc, mData, mOut: (128,) fp32; mFlag: (1,) int32, zero on entry.
        self.kernel(mSrc, mData, mFlag, mOut).launch(
            grid=(2, 1, 1),
            block=(self.threads, 1, 1),
            stream=stream,
        )

    # cutespin: grid=2
    @cute.kernel
    def kernel(
        self,
        mSrc: cute.Tensor,
        mData: cute.Tensor,
        mFlag: cute.Tensor,
        mOut: cute.Tensor,
    ):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        flag_ptr = mFlag.iterator

        if bidx == 0:
            # Producer CTA: publish the block, then raise the flag once for the whole CTA.
            mData[tidx] = mSrc[tidx] * 2.0
            cute.arch.sync_threads()
            if tidx == 0:
                cute.arch.red(flag_ptr, cutlass.Int32(1), op="add", dtype="s32", sem="release", scope="gpu")
        else:
            # Consumer CTA: one thread spins, the CTA barrier passes the acquire on.
            if tidx == 0:
                while cute.arch.load(flag_ptr, cutlass.Int32, sem="acquire", scope="gpu") < 1:
                    pass
            cute.arch.sync_threads()
            mOut[tidx] = mData[tidx] + 1.0
