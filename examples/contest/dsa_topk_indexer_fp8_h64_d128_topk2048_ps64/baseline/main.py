"""Naive Triton DSA indexer: one program per (sequence, page of its block table) computes the
page's 64 token scores over all 64 heads (fp8 keys dequantized with their per-token scales);
torch.topk then picks the 2048 best of each sequence and maps them to global token indices."""

import torch
import triton
import triton.language as tl


@triton.jit
def _scores(q_ptr, kv_ptr, sc_ptr, w_ptr, lens_ptr, bt_ptr, out_ptr, max_pages, row_bytes, row_floats,
            H: tl.constexpr, D: tl.constexpr, PS: tl.constexpr):
    b = tl.program_id(0)
    j = tl.program_id(1)
    seq_len = tl.load(lens_ptr + b)
    toks = tl.arange(0, PS)
    valid = j * PS + toks < seq_len
    page = tl.load(bt_ptr + b * max_pages + j)
    page = tl.where(j * PS < seq_len, page, 0)  # pages past the sequence are never read
    hs = tl.arange(0, H)
    ds = tl.arange(0, D)
    q = tl.load(q_ptr + (b * H + hs[:, None]) * D + ds[None, :]).to(tl.float32)  # [H, D]
    k = tl.load(kv_ptr + page.to(tl.int64) * row_bytes + toks[:, None] * D + ds[None, :]).to(tl.float32)  # [PS, D]
    k = k * tl.load(sc_ptr + page.to(tl.int64) * row_floats + toks)[:, None]
    s = tl.maximum(tl.dot(q, tl.trans(k), input_precision="ieee"), 0.0)  # [H, PS]; fp32, not tf32: ties at the top-k edge
    w = tl.load(w_ptr + b * H + hs)
    final = tl.sum(s * w[:, None], axis=0)
    final = tl.where(valid, final, float("-inf"))
    tl.store(out_ptr + b * max_pages * PS + j * PS + toks, final)


def run(q_index_fp8, k_index_cache_fp8, weights, seq_lens, block_table, topk_indices):
    batch, heads, dim = q_index_fp8.shape
    num_pages, page_size = k_index_cache_fp8.shape[0], k_index_cache_fp8.shape[1]
    max_pages = block_table.shape[1]
    flat = k_index_cache_fp8.view(torch.uint8).reshape(num_pages, -1)
    kv = flat[:, : page_size * dim].view(torch.float8_e4m3fn)  # views: no copy of the cache
    sc = flat[:, page_size * dim:].view(torch.float32)
    scores = torch.empty(batch, max_pages * page_size, dtype=torch.float32, device=q_index_fp8.device)
    bt = block_table.contiguous()
    _scores[(batch, max_pages)](q_index_fp8.contiguous(), kv, sc, weights.contiguous(), seq_lens, bt, scores,
                                max_pages, flat.stride(0), flat.stride(0) // 4, H=heads, D=dim, PS=page_size)
    k = min(topk_indices.shape[1], scores.shape[1])
    values, pos = torch.topk(scores, k, dim=1)
    pages = bt.long().gather(1, pos // page_size)
    glob = (pages * page_size + pos % page_size).to(torch.int32)
    topk_indices.fill_(-1)
    topk_indices[:, :k] = torch.where(values == float("-inf"), -1, glob)
