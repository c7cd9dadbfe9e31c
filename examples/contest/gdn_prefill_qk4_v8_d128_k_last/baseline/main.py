"""Naive Triton GDN prefill (k-last state): one program per (sequence, value head, 32 V rows).

The state slice [32, K] stays in registers while the program walks its sequence's tokens in order;
no chunking (the chunked WY form is what a fast kernel would do)."""

import math

import triton
import triton.language as tl


@triton.jit
def _gdn_prefill(q_ptr, k_ptr, v_ptr, s_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, cu_ptr, o_ptr, ns_ptr, scale,
                 HQ: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BV: tl.constexpr):
    seq = tl.program_id(0)
    h = tl.program_id(1)
    vb = tl.program_id(2)
    hq = h // (HV // HQ)
    ks = tl.arange(0, K)
    vs = vb * BV + tl.arange(0, BV)
    start = tl.load(cu_ptr + seq).to(tl.int32)
    end = tl.load(cu_ptr + seq + 1).to(tl.int32)
    base = (seq * HV + h) * V * K
    s = tl.load(s_ptr + base + vs[:, None] * K + ks[None, :])  # [BV, K]
    neg_a = -tl.exp(tl.load(alog_ptr + h))
    dtb = tl.load(dtb_ptr + h)
    for t in range(start, end):
        x = tl.load(a_ptr + t * HV + h).to(tl.float32) + dtb
        softplus = tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x)))
        g = tl.exp(neg_a * softplus)
        beta = 1.0 / (1.0 + tl.exp(-tl.load(b_ptr + t * HV + h).to(tl.float32)))
        q = tl.load(q_ptr + (t * HQ + hq) * K + ks).to(tl.float32)
        k = tl.load(k_ptr + (t * HQ + hq) * K + ks).to(tl.float32)
        v = tl.load(v_ptr + (t * HV + h) * V + vs).to(tl.float32)
        s = s * g
        old_v = tl.sum(s * k[None, :], axis=1)
        new_v = beta * v + (1.0 - beta) * old_v
        s = s + (new_v - old_v)[:, None] * k[None, :]
        out = scale * tl.sum(s * q[None, :], axis=1)
        tl.store(o_ptr + (t * HV + h) * V + vs, out.to(tl.bfloat16))
    tl.store(ns_ptr + base + vs[:, None] * K + ks[None, :], s)


def run(q, k, v, state, A_log, a, dt_bias, b, cu_seqlens, scale, output, new_state):
    _, HQ, K = q.shape
    HV, V = v.shape[1], v.shape[2]
    num_seqs = cu_seqlens.shape[0] - 1
    if scale is None or scale == 0.0:
        scale = 1.0 / math.sqrt(K)
    output.zero_()  # tokens outside every sequence (none when cu_seqlens[-1] == total) stay 0, as the definition says
    BV = 32 if q.is_cuda else V  # the CPU interpreter runs programs one by one: fewer, wider ones
    _gdn_prefill[(num_seqs, HV, V // BV)](q.contiguous(), k.contiguous(), v.contiguous(), state.contiguous(),
                                          A_log, a.contiguous(), dt_bias, b.contiguous(), cu_seqlens, output,
                                          new_state, float(scale), HQ=HQ, HV=HV, K=K, V=V, BV=BV)
