"""Naive Triton DSA sparse attention: one program per (token, head) streams the token's 2048
selected cache slots in blocks of 64 with an online softmax; -1 slots are skipped."""

import triton
import triton.language as tl


@triton.jit
def _attn(qn_ptr, qp_ptr, kc_ptr, kp_ptr, idx_ptr, o_ptr, lse_ptr, sm_scale,
          H: tl.constexpr, DC: tl.constexpr, DP: tl.constexpr, TOPK: tl.constexpr, BLOCK: tl.constexpr):
    t = tl.program_id(0)
    h = tl.program_id(1)
    dc = tl.arange(0, DC)
    dp = tl.arange(0, DP)
    qn = tl.load(qn_ptr + (t * H + h) * DC + dc).to(tl.float32)
    qp = tl.load(qp_ptr + (t * H + h) * DP + dp).to(tl.float32)
    m = float("-inf")
    den = 0.0
    acc = tl.zeros([DC], dtype=tl.float32)
    for start in range(0, TOPK, BLOCK):
        idx = tl.load(idx_ptr + t * TOPK + start + tl.arange(0, BLOCK))
        valid = idx != -1
        row = tl.where(valid, idx, 0).to(tl.int64)
        kc = tl.load(kc_ptr + row[:, None] * DC + dc[None, :]).to(tl.float32)  # [BLOCK, DC]
        kp = tl.load(kp_ptr + row[:, None] * DP + dp[None, :]).to(tl.float32)
        logits = (tl.sum(kc * qn[None, :], axis=1) + tl.sum(kp * qp[None, :], axis=1)) * sm_scale
        logits = tl.where(valid, logits, float("-inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=0))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp(logits - m_safe)
        alpha = tl.exp(m - m_safe)
        den = den * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * kc, axis=0)
        m = m_new
    out = tl.where(den > 0, acc / den, 0.0)
    tl.store(o_ptr + (t * H + h) * DC + dc, out.to(tl.bfloat16))
    lse = tl.where(den > 0, (m + tl.log(den)) * 1.4426950408889634, float("-inf"))
    tl.store(lse_ptr + t * H + h, lse)


def run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, output, lse):
    tokens, heads, dc = q_nope.shape
    dp = q_pe.shape[-1]
    topk = sparse_indices.shape[1]
    if tokens:
        _attn[(tokens, heads)](q_nope.contiguous(), q_pe.contiguous(), ckv_cache.contiguous(), kpe_cache.contiguous(),
                               sparse_indices.contiguous(), output, lse, float(sm_scale),
                               H=heads, DC=dc, DP=dp, TOPK=topk,
                               BLOCK=64 if q_nope.is_cuda else topk)  # the CPU interpreter: one wide block
