#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

cudaError_t launch_sum(int variant, int threads, bool atomic, const float* x, int64_t n, float* out,
                       float* partial, int max_blocks, int sm_count, cudaStream_t stream);
cudaError_t launch_dot(int variant, int threads, bool atomic, const float* x, const float* y, int64_t n,
                       float* out, float* partial, int max_blocks, int sm_count, cudaStream_t stream);
cudaError_t launch_read(int unroll, int threads, const float* x, int64_t n, unsigned* sink, int sm_count,
                        cudaStream_t stream);

namespace {

constexpr int kMaxBlocks = 1024;  // the second pass is one block of 1024 threads, one partial each

int sm_count() {
  int device = 0, count = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

void check_input(const torch::Tensor& t) {
  TORCH_CHECK(t.is_cuda() && t.is_contiguous() && t.scalar_type() == torch::kFloat32,
              "inputs must be contiguous float32 CUDA tensors");
  TORCH_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, "16-byte loads need 16-byte aligned data");
}

void check_threads(int variant, int threads) {
  TORCH_CHECK(threads > 0 && threads <= 1024, "threads per block must be in 1..1024, got ", threads);
  TORCH_CHECK(variant <= 2 || threads % 32 == 0, "the shuffle versions need whole warps, got ", threads);
}

}  // namespace

torch::Tensor reduce_sum(torch::Tensor x, int64_t variant, int64_t threads, bool atomic) {
  check_input(x);
  check_threads(variant, threads);
  static const int sms = sm_count();
  auto out = torch::zeros({}, x.options());
  auto partial = torch::empty({kMaxBlocks}, x.options());
  C10_CUDA_CHECK(launch_sum(variant, threads, atomic, x.data_ptr<float>(), x.numel(), out.data_ptr<float>(),
                            partial.data_ptr<float>(), kMaxBlocks, sms, c10::cuda::getCurrentCUDAStream()));
  return out;
}

torch::Tensor reduce_dot(torch::Tensor x, torch::Tensor y, int64_t variant, int64_t threads, bool atomic) {
  check_input(x);
  check_input(y);
  TORCH_CHECK(x.sizes() == y.sizes(), "shapes differ: ", x.sizes(), " vs ", y.sizes());
  check_threads(variant, threads);
  static const int sms = sm_count();
  auto out = torch::zeros({}, x.options());
  auto partial = torch::empty({kMaxBlocks}, x.options());
  C10_CUDA_CHECK(launch_dot(variant, threads, atomic, x.data_ptr<float>(), y.data_ptr<float>(), x.numel(),
                            out.data_ptr<float>(), partial.data_ptr<float>(), kMaxBlocks, sms,
                            c10::cuda::getCurrentCUDAStream()));
  return out;
}

torch::Tensor read_only(torch::Tensor x, int64_t unroll, int64_t threads) {
  check_input(x);
  static const int sms = sm_count();
  auto sink = torch::zeros({1}, x.options().dtype(torch::kInt32));
  C10_CUDA_CHECK(launch_read(unroll, threads, x.data_ptr<float>(), x.numel(),
                             reinterpret_cast<unsigned*>(sink.data_ptr<int32_t>()), sms,
                             c10::cuda::getCurrentCUDAStream()));
  return sink;
}
