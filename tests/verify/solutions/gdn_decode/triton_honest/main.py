"""Honest Triton GDN decode (k-last state), destination-passing: one program per (batch, value head).

Runs in Triton's interpreter on a CPU. Each program loads its [V, K] state slice, decays it by the
gate, applies the delta rule for the one token and writes the new slice and the V outputs."""

import math

import triton
import triton.language as tl


@triton.jit
def _decode(q_ptr, k_ptr, v_ptr, s_ptr, alog_ptr, a_ptr, dtb_ptr, b_ptr, o_ptr, ns_ptr, scale,
            HQ: tl.constexpr, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr):
    bid = tl.program_id(0)
    h = tl.program_id(1)
    hq = h // (HV // HQ)
    ks = tl.arange(0, K)
    vs = tl.arange(0, V)
    x = tl.load(a_ptr + bid * HV + h).to(tl.float32) + tl.load(dtb_ptr + h)
    softplus = tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x)))
    g = tl.exp(-tl.exp(tl.load(alog_ptr + h)) * softplus)
    beta = 1.0 / (1.0 + tl.exp(-tl.load(b_ptr + bid * HV + h).to(tl.float32)))
    q = tl.load(q_ptr + (bid * HQ + hq) * K + ks).to(tl.float32)
    k = tl.load(k_ptr + (bid * HQ + hq) * K + ks).to(tl.float32)
    v = tl.load(v_ptr + (bid * HV + h) * V + vs).to(tl.float32)
    base = (bid * HV + h) * V * K
    s = tl.load(s_ptr + base + vs[:, None] * K + ks[None, :]) * g
    old_v = tl.sum(s * k[None, :], axis=1)
    s = s + (beta * (v - old_v))[:, None] * k[None, :]
    out = scale * tl.sum(s * q[None, :], axis=1)
    tl.store(ns_ptr + base + vs[:, None] * K + ks[None, :], s)
    tl.store(o_ptr + (bid * HV + h) * V + vs, out.to(tl.bfloat16))


def run(q, k, v, state, A_log, a, dt_bias, b, scale, output, new_state):
    B, _, HQ, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    if scale is None or scale == 0.0:
        scale = 1.0 / math.sqrt(K)
    _decode[(B, HV)](q.contiguous(), k.contiguous(), v.contiguous(), state.contiguous(), A_log.contiguous(),
                     a.contiguous(), dt_bias.contiguous(), b.contiguous(), output, new_state, float(scale),
                     HQ=HQ, HV=HV, K=K, V=V)
