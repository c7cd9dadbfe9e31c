// RMSNorm, one block per row: y = x * rsqrt(mean(x^2) + 1e-6) * weight (float32).
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

constexpr int kThreads = 256;

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
  return v;
}

__global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                               float* __restrict__ y, int hidden) {
  const int row = blockIdx.x;
  const float4* xr = reinterpret_cast<const float4*>(x + static_cast<size_t>(row) * hidden);
  const float4* wr = reinterpret_cast<const float4*>(w);
  float4* yr = reinterpret_cast<float4*>(y + static_cast<size_t>(row) * hidden);
  const int vecs = hidden / 4;
  float sum = 0.f;
  for (int i = threadIdx.x; i < vecs; i += kThreads) {
    float4 v = xr[i];
    sum += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
  }
  __shared__ float partial[kThreads / 32];
  sum = warp_sum(sum);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < kThreads / 32 ? partial[threadIdx.x] : 0.f;
    v = warp_sum(v);
    if (threadIdx.x == 0) partial[0] = rsqrtf(v / hidden + 1e-6f);
  }
  __syncthreads();
  const float inv = partial[0];
  for (int i = threadIdx.x; i < vecs; i += kThreads) {
    float4 v = xr[i], g = wr[i];
    yr[i] = make_float4(v.x * inv * g.x, v.y * inv * g.y, v.z * inv * g.z, v.w * inv * g.w);
  }
}

torch::Tensor run(torch::Tensor x, torch::Tensor weight) {
  TORCH_CHECK(x.is_cuda() && weight.is_cuda(), "CUDA tensors expected");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32, "float32 only");
  TORCH_CHECK(x.dim() == 2 && x.size(1) % 4 == 0 && weight.size(0) == x.size(1), "bad shapes");
  auto xc = x.contiguous();
  auto wc = weight.contiguous();
  auto y = torch::empty_like(xc);
  const int rows = static_cast<int>(xc.size(0));
  if (rows == 0) return y;
  rmsnorm_kernel<<<rows, kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), wc.data_ptr<float>(), y.data_ptr<float>(), static_cast<int>(xc.size(1)));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run, "RMSNorm (CUDA, one block per row)"); }
