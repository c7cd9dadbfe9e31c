// Top-k selection for the CPU without sorting: each row is scanned once, keeping the k best
// values seen so far in a small array together with the position of their minimum; a new
// value replaces that minimum only when it is larger. Rows are split across threads.
#include <torch/extension.h>

#include <ATen/Parallel.h>
#include <tuple>

constexpr int64_t kK = 8;

std::tuple<torch::Tensor, torch::Tensor> run(torch::Tensor scores) {
  TORCH_CHECK(scores.dim() == 2 && scores.scalar_type() == torch::kFloat32, "scores: [rows, vocab] float32");
  TORCH_CHECK(scores.size(1) >= kK, "a row needs at least k entries");
  auto s = scores.contiguous();
  const int64_t rows = s.size(0);
  const int64_t vocab = s.size(1);
  auto values = torch::empty({rows, kK}, s.options());
  auto indices = torch::empty({rows, kK}, s.options().dtype(torch::kInt64));
  const float* sp = s.data_ptr<float>();
  float* vp = values.data_ptr<float>();
  int64_t* ip = indices.data_ptr<int64_t>();

  at::parallel_for(0, rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = sp + r * vocab;
      float best[kK];
      int64_t where[kK];
      int64_t min_pos = 0;
      for (int64_t j = 0; j < kK; ++j) {
        best[j] = row[j];
        where[j] = j;
        if (best[j] < best[min_pos]) min_pos = j;
      }
      for (int64_t c = kK; c < vocab; ++c) {
        const float v = row[c];
        if (v <= best[min_pos]) continue;  // the common case: one compare per element
        best[min_pos] = v;
        where[min_pos] = c;
        for (int64_t j = 0; j < kK; ++j) {
          if (best[j] < best[min_pos]) min_pos = j;
        }
      }
      for (int64_t j = 0; j < kK; ++j) {
        vp[r * kK + j] = best[j];
        ip[r * kK + j] = where[j];
      }
    }
  });
  return std::make_tuple(values, indices);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run, "top-8 per row without sorting (CPU)"); }
