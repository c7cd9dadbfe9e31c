// kloop profiler probes: four kernels with one planted bottleneck each, different from the
// shared fixtures' cases (random gather, not a strided copy; column reduction in shared memory,
// not a transpose; register spills under a launch-bounds cap, not register-limited occupancy; a hot atomic).
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

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: probes gather_random|smem_column_sum|spill_capped_regs|atomic_hot\n"); return 2; }
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
    else { fprintf(stderr, "unknown case %s\n", c); return 2; }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
  }
  printf("%s done\n", c);
  return 0;
}
