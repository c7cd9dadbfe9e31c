// kloop profiler probes: kernels with one planted bottleneck each, different from the shared
// fixtures' cases (random gather, not a strided copy; column reduction in shared memory, not a
// transpose; register spills under a launch-bounds cap, not register-limited occupancy; a hot
// atomic), plus the two kinds the first playbook misdiagnosed (issue #14): a per-thread array
// indexed at run time (local memory, no spill) and a matrix product with no on-chip reuse, with a
// shared-memory-tiled product as its control.
// Usage: probes CASE   (runs the case's kernel twice; profile the second launch).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

static const size_t N = size_t(1) << 25;  // 32M elements: 128 MiB of floats, well above L2

// 1. random gather: out[i] = in[idx[i]] with a scattered permutation; each lane hits its own sector
__global__ void gather_random(const float* __restrict__ in, const unsigned* __restrict__ idx,
                              float* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = in[idx[i]];
}

// 2. shared-memory column sums: 32 threads of a warp read one column of a 32x32 tile (no padding),
//    repeated so the 32-way conflicted loads dominate
__global__ void smem_column_sum(const float* __restrict__ in, float* __restrict__ out, size_t n) {
  __shared__ float tile[8][32][32];
  int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  size_t base = (blockIdx.x * size_t(8) + w) * 1024;
  if (base + 1024 > n) return;
  for (int r = 0; r < 32; ++r) tile[w][r][lane] = in[base + r * 32 + lane];
  __syncwarp();
  float acc = 0.f;
  for (int rep = 0; rep < 32; ++rep)
    for (int r = 0; r < 32; ++r) acc += tile[w][lane][(r + rep) & 31];  // lane strides by 32 words: same bank
  out[blockIdx.x * size_t(256) + threadIdx.x] = acc;
}

// 3. register spill: 128 live values per thread under __launch_bounds__(256, 8), i.e. at most
//    32 registers per thread on a 64K-register SM: ptxas spills the rest to local memory
__global__ void __launch_bounds__(256, 8) spill_capped_regs(const float* __restrict__ in, float* __restrict__ out, size_t n) {
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float v[128];
#pragma unroll
  for (int k = 0; k < 128; ++k) v[k] = in[(i + size_t(k) * 4099) % n];  // consecutive lanes, consecutive addresses
  float s = 0.f;
#pragma unroll 1
  for (int it = 0; it < 8; ++it) {
#pragma unroll
    for (int k = 0; k < 128; ++k) { s = fmaf(s, 0.999f, v[k]); v[k] = v[k] * 0.5f + s; }
  }
  out[i] = s;
}

// 4. hot atomic: every thread adds into one of only 8 counters
__global__ void atomic_hot(const float* __restrict__ in, float* __restrict__ counters, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    atomicAdd(&counters[i & 7], in[i]);
}

// 5. run-time-indexed local array: 32 floats per thread indexed by a value loaded from memory, so
//    the array cannot be registers (ptxas: a 128-byte stack frame, 0 bytes spill)
__global__ void local_array_dynamic(const float* __restrict__ in, const unsigned* __restrict__ idx,
                                    float* __restrict__ out, size_t n) {
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float a[32];
#pragma unroll
  for (int k = 0; k < 32; ++k) a[k] = in[(i + size_t(k) * 1031) % n];
  float s = 0.f;
  unsigned j = idx[i];
  for (int it = 0; it < 64; ++it) {  // each step reads and writes a[] at a data-dependent index
    unsigned k = (j + it * 7u) & 31u;
    s += a[k];
    a[(k * 5u + 3u) & 31u] = s * 0.5f;
  }
  out[i] = s;
}

// 6. matrix product with no on-chip reuse: C = A.B, 16x16 threads, one output per thread, every
//    operand read from global memory (L1/L2) for each multiply-add; A's loads are warp broadcasts
static const int GM = 2048;
__global__ void gemm_naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float acc = 0.f;
  for (int k = 0; k < GM; ++k) acc = fmaf(A[row * GM + k], B[k * GM + col], acc);
  C[row * GM + col] = acc;
}

// 7. control: the same product with 32x32 shared-memory tiles (each operand loaded once per tile)
__global__ void gemm_tiled_smem(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  __shared__ float As[32][33], Bs[32][33];
  int tx = threadIdx.x % 32, ty = threadIdx.x / 32;  // 32x8 threads, 4 rows each
  int row0 = blockIdx.y * 32, col = blockIdx.x * 32 + tx;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < GM; k0 += 32) {
    for (int r = ty; r < 32; r += 8) {
      As[r][tx] = A[(row0 + r) * GM + k0 + tx];
      Bs[r][tx] = B[(k0 + r) * GM + col];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 32; ++k)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[q] = fmaf(As[ty + 8 * q][k], Bs[k][tx], acc[q]);
    __syncthreads();
  }
  for (int q = 0; q < 4; ++q) C[(row0 + ty + 8 * q) * GM + col] = acc[q];
}

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: probes gather_random|smem_column_sum|spill_capped_regs|atomic_hot|local_array_dynamic|gemm_naive|gemm_tiled_smem\n"); return 2; }
  const char* c = argv[1];
  float *a, *b;
  unsigned* idx;
  CK(cudaMalloc(&a, N * sizeof(float)));
  CK(cudaMalloc(&b, N * sizeof(float)));
  CK(cudaMalloc(&idx, N * sizeof(unsigned)));
  CK(cudaMemset(a, 0, N * sizeof(float)));
  CK(cudaMemset(b, 0, N * sizeof(float)));
  unsigned* host = (unsigned*)malloc(N * sizeof(unsigned));
  for (size_t i = 0; i < N; ++i) host[i] = unsigned((i * 2654435761ull) % N);  // scattered permutation-like map
  CK(cudaMemcpy(idx, host, N * sizeof(unsigned), cudaMemcpyHostToDevice));
  free(host);
  for (int rep = 0; rep < 2; ++rep) {
    if (!strcmp(c, "gather_random")) gather_random<<<132 * 16, 256>>>(a, idx, b, N);
    else if (!strcmp(c, "smem_column_sum")) smem_column_sum<<<N / 8192, 256>>>(a, b, N);
    else if (!strcmp(c, "spill_capped_regs")) spill_capped_regs<<<(N / 16 + 255) / 256, 256>>>(a, b, N / 16);
    else if (!strcmp(c, "atomic_hot")) atomic_hot<<<132 * 8, 256>>>(a, b, N / 4);
    else if (!strcmp(c, "local_array_dynamic")) local_array_dynamic<<<(N / 4 + 255) / 256, 256>>>(a, idx, b, N / 4);
    else if (!strcmp(c, "gemm_naive")) gemm_naive<<<dim3(GM / 16, GM / 16), dim3(16, 16)>>>(a, a + GM * GM, b);
    else if (!strcmp(c, "gemm_tiled_smem")) gemm_tiled_smem<<<dim3(GM / 32, GM / 32), 256>>>(a, a + GM * GM, b);
    else { fprintf(stderr, "unknown case %s\n", c); return 2; }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
  }
  printf("%s done\n", c);
  return 0;
}
