"""Naive Triton GDN decode (k-last state): one program per (batch, value head, block of V rows).

Each program reads its [BV, K] slice of the state once, applies the gated delta rule for the one
token, and writes the new state slice and BV outputs. No tiling across heads, no fusion tricks."""

import math

import triton
import triton.language as tl


@triton.jit
def _gdn_decode(q_ptr, k_ptr, v_ptr, s_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, o_ptr, ns_ptr, scale,
                HQ: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr, BV: tl.constexpr):
    bid = tl.program_id(0)
    h = tl.program_id(1)
    vb = tl.program_id(2)
    hq = h // (HV // HQ)
    ks = tl.arange(0, K)
    vs = vb * BV + tl.arange(0, BV)
    x = tl.load(a_ptr + bid * HV + h).to(tl.float32) + tl.load(dtb_ptr + h)
    softplus = tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x)))
    g = tl.exp(-tl.exp(tl.load(alog_ptr + h)) * softplus)
    beta = 1.0 / (1.0 + tl.exp(-tl.load(b_ptr + bid * HV + h).to(tl.float32)))
    q = tl.load(q_ptr + (bid * HQ + hq) * K + ks).to(tl.float32)
    k = tl.load(k_ptr + (bid * HQ + hq) * K + ks).to(tl.float32)
    v = tl.load(v_ptr + (bid * HV + h) * V + vs).to(tl.float32)
    base = (bid * HV + h) * V * K
    s = tl.load(s_ptr + base + vs[:, None] * K + ks[None, :]) * g  # [BV, K]
    old_v = tl.sum(s * k[None, :], axis=1)
    new_v = beta * v + (1.0 - beta) * old_v
    s = s + (new_v - old_v)[:, None] * k[None, :]
    out = scale * tl.sum(s * q[None, :], axis=1)
    tl.store(ns_ptr + base + vs[:, None] * K + ks[None, :], s)
    tl.store(o_ptr + (bid * HV + h) * V + vs, out.to(tl.bfloat16))


def run(q, k, v, state, A_log, a, dt_bias, b, scale, output, new_state):
    B, _, HQ, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    if scale is None or scale == 0.0:
        scale = 1.0 / math.sqrt(K)
    BV = 32 if q.is_cuda else V  # the CPU interpreter runs programs one by one: fewer, wider ones
    _gdn_decode[(B, HV, V // BV)](q.contiguous(), k.contiguous(), v.contiguous(), state.contiguous(),
                                  A_log, a.contiguous(), dt_bias, b.contiguous(), output, new_state,
                                  float(scale), HQ=HQ, HV=HV, K=K, V=V, BV=BV)
