#include <algorithm>
#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

constexpr int kThreads = 256;  // threads per block: 8 warps; up to 8 blocks fill an SM's 2048 threads
constexpr int kUnroll = 2;     // 16-byte vectors per thread per pass of the grid-stride loop

__device__ __forceinline__ float add_elem(float a, float b) { return a + b; }
__device__ __forceinline__ __nv_bfloat16 add_elem(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __float2bfloat16(__bfloat162float(a) + __bfloat162float(b));  // fp32 add, one rounding
}

// 16 bytes of T (4 float or 8 bf16), moved by one 128-bit load or store.
template <typename T>
union Vec16 {
  static constexpr int N = 16 / sizeof(T);
  uint4 raw;
  T v[N];
};

template <typename T>
__device__ __forceinline__ Vec16<T> add_vec(const Vec16<T>& a, const Vec16<T>& b) {
  Vec16<T> c;
#pragma unroll
  for (int k = 0; k < Vec16<T>::N; ++k) c.v[k] = add_elem(a.v[k], b.v[k]);
  return c;
}

// The n % N elements after the last whole vector, one each for the first few threads.
template <typename T>
__device__ __forceinline__ void add_tail(const T* __restrict__ a, const T* __restrict__ b,
                                         T* __restrict__ c, int64_t start, int64_t n, int64_t tid) {
  if (tid < n - start) c[start + tid] = add_elem(a[start + tid], b[start + tid]);
}

// v1: one element per thread.
template <typename T>
__global__ void add_one_per_thread_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                          T* __restrict__ c, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = add_elem(a[i], b[i]);
}

// v2: one 16-byte vector per thread.
template <typename T>
__global__ void add_vec16_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                 T* __restrict__ c, int64_t n) {
  constexpr int N = Vec16<T>::N;
  const int64_t n_vec = n / N;
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n_vec) {
    Vec16<T> va, vb;
    va.raw = reinterpret_cast<const uint4*>(a)[i];
    vb.raw = reinterpret_cast<const uint4*>(b)[i];
    reinterpret_cast<uint4*>(c)[i] = add_vec(va, vb).raw;
  }
  add_tail(a, b, c, n_vec * N, n, i);
}

// v3: 16-byte vectors in a grid-stride loop. Each pass loads kUnroll vectors of a and of b
// (2 * kUnroll * 16 bytes in flight per thread) before the first add.
template <typename T>
__global__ void add_vec16_grid_stride_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                             T* __restrict__ c, int64_t n) {
  constexpr int N = Vec16<T>::N;
  const int64_t n_vec = n / N;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t n_threads = int64_t(gridDim.x) * blockDim.x;
  const uint4* a4 = reinterpret_cast<const uint4*>(a);
  const uint4* b4 = reinterpret_cast<const uint4*>(b);
  uint4* c4 = reinterpret_cast<uint4*>(c);
  for (int64_t base = tid; base < n_vec; base += kUnroll * n_threads) {
    Vec16<T> va[kUnroll], vb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * n_threads;  // neighbouring threads read neighbouring vectors
      if (i < n_vec) {
        va[u].raw = a4[i];
        vb[u].raw = b4[i];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * n_threads;
      if (i < n_vec) c4[i] = add_vec(va[u], vb[u]).raw;
    }
  }
  add_tail(a, b, c, n_vec * N, n, tid);
}

template <typename T>
cudaError_t launch(int variant, const void* a, const void* b, void* c, int64_t n, int sm_count, cudaStream_t stream) {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  T* pc = static_cast<T*>(c);
  const int64_t n_vec = n / Vec16<T>::N;
  if (variant == 1) {
    const int64_t blocks = (n + kThreads - 1) / kThreads;
    add_one_per_thread_kernel<T><<<blocks, kThreads, 0, stream>>>(pa, pb, pc, n);
  } else if (variant == 2) {
    const int64_t blocks = std::max<int64_t>((n_vec + kThreads - 1) / kThreads, 1);
    add_vec16_kernel<T><<<blocks, kThreads, 0, stream>>>(pa, pb, pc, n);
  } else {
    // Blocks that fit on one SM at once; registers decide it. A grid of more than fit would
    // leave a second, partly empty wave of blocks that each carry a full share of the work.
    int per_sm = 0;
    const cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, add_vec16_grid_stride_kernel<T>, kThreads, 0);
    if (err != cudaSuccess) return err;
    const int64_t resident = int64_t(sm_count) * std::max(per_sm, 1);
    const int64_t per_block = int64_t(kThreads) * kUnroll;  // vectors per block per pass
    const int64_t blocks = std::max<int64_t>(std::min((n_vec + per_block - 1) / per_block, resident), 1);
    add_vec16_grid_stride_kernel<T><<<blocks, kThreads, 0, stream>>>(pa, pb, pc, n);
  }
  return cudaGetLastError();
}

// Called by the C++ wrapper: variant 1, 2 or 3 as above; n > 0; a, b, c 16-byte aligned for 2 and 3.
cudaError_t launch_add(int variant, bool bf16, const void* a, const void* b, void* c, int64_t n,
                       int sm_count, cudaStream_t stream) {
  return bf16 ? launch<__nv_bfloat16>(variant, a, b, c, n, sm_count, stream)
              : launch<float>(variant, a, b, c, n, sm_count, stream);
}
