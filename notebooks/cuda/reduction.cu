#include <algorithm>
#include <cstdint>
#include <cuda_runtime.h>

constexpr unsigned kFullMask = 0xffffffffu;

// One input element, or the product of two for a dot product.
template <bool kDot>
__device__ __forceinline__ float term(const float* __restrict__ x, const float* __restrict__ y, int64_t i) {
  return kDot ? x[i] * y[i] : x[i];
}

// The block's result goes to out: one atomicAdd per block (out zeroed first), or out[blockIdx.x].
template <bool kAtomic>
__device__ __forceinline__ void store_block_sum(float* __restrict__ out, float v) {
  if (kAtomic) atomicAdd(out, v);
  else out[blockIdx.x] = v;
}

// v1: CUDA by Example's dot product. cache has blockDim.x floats (dynamic shared memory).
template <bool kDot, bool kAtomic, bool kPowerOfTwoOnly>
__global__ void tree_kernel(const float* __restrict__ x, const float* __restrict__ y, int64_t n,
                            float* __restrict__ out) {
  extern __shared__ float cache[];
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  float acc = 0.f;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) acc += term<kDot>(x, y, i);
  cache[threadIdx.x] = acc;
  __syncthreads();
  if (kPowerOfTwoOnly) {
    for (unsigned i = blockDim.x / 2; i != 0; i /= 2) {  // the book's loop
      if (threadIdx.x < i) cache[threadIdx.x] += cache[threadIdx.x + i];
      __syncthreads();
    }
  } else {
    unsigned i = 1;
    while (i < blockDim.x) i *= 2;  // the next power of two >= blockDim.x
    for (i /= 2; i != 0; i /= 2) {
      if (threadIdx.x < i && threadIdx.x + i < blockDim.x) cache[threadIdx.x] += cache[threadIdx.x + i];
      __syncthreads();
    }
  }
  if (threadIdx.x == 0) store_block_sum<kAtomic>(out, cache[0]);
}

// The sum of v over a warp, in lane 0: five shuffles, each halving the lanes that matter.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(kFullMask, v, offset);
  return v;
}

// The sum of v over the block, in thread 0. blockDim.x is a multiple of 32, at most 1024.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float warp_sums[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.f;
  return warp == 0 ? warp_sum(v) : 0.f;
}

// v2: grid-stride partials, then warp shuffles.
template <bool kDot, bool kAtomic>
__global__ void shuffle_kernel(const float* __restrict__ x, const float* __restrict__ y, int64_t n,
                               float* __restrict__ out) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  float acc = 0.f;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) acc += term<kDot>(x, y, i);
  acc = block_sum(acc);
  if (threadIdx.x == 0) store_block_sum<kAtomic>(out, acc);
}

// v3: 16-byte loads, kUnroll float4 of each input in flight per thread, then warp shuffles.
// x and y must be 16-byte aligned; the n % 4 tail is read one float at a time.
template <bool kDot, bool kAtomic, int kUnroll>
__global__ void vec16_kernel(const float* __restrict__ x, const float* __restrict__ y, int64_t n,
                             float* __restrict__ out) {
  const int64_t n4 = n / 4;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const float4* y4 = reinterpret_cast<const float4*>(y);
  float acc = 0.f;
  for (int64_t base = tid; base < n4; base += kUnroll * stride) {
    float4 a[kUnroll], b[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * stride;  // neighbouring threads read neighbouring vectors
      a[u] = i < n4 ? x4[i] : make_float4(0.f, 0.f, 0.f, 0.f);
      if (kDot) b[u] = i < n4 ? y4[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (kDot) acc += a[u].x * b[u].x + a[u].y * b[u].y + a[u].z * b[u].z + a[u].w * b[u].w;
      else acc += (a[u].x + a[u].y) + (a[u].z + a[u].w);
    }
  }
  for (int64_t i = n4 * 4 + tid; i < n; i += stride) acc += term<kDot>(x, y, i);
  acc = block_sum(acc);
  if (threadIdx.x == 0) store_block_sum<kAtomic>(out, acc);
}

// The read roof's candidate: stream x in with 16-byte loads, kUnroll in flight, XOR the bits.
template <int kUnroll>
__global__ void read_kernel(const float* __restrict__ x, int64_t n, unsigned* __restrict__ sink) {
  const int64_t n4 = n / 4;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const uint4* x4 = reinterpret_cast<const uint4*>(x);
  unsigned bits = 0;
  for (int64_t base = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; base < n4; base += kUnroll * stride) {
    uint4 a[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + u * stride;
      a[u] = i < n4 ? x4[i] : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) bits ^= a[u].x ^ a[u].y ^ a[u].z ^ a[u].w;
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) bits ^= __shfl_down_sync(kFullMask, bits, offset);
  if (threadIdx.x % 32 == 0) atomicXor(sink, bits);  // keeps every load; one word for all blocks
}

// At most as many blocks as fit on the GPU at once (the occupancy API, from the kernel's
// registers and shared memory), as many as there are elements to give each thread one, and
// at most max_blocks. Launches `kernel` on them and returns the block count.
template <typename Kernel>
int launch_resident(Kernel kernel, int threads, size_t smem, int64_t work, int max_blocks, int sm_count,
                    cudaStream_t stream, const float* x, const float* y, int64_t n, float* out) {
  int per_sm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
  const int64_t needed = std::max<int64_t>((work + threads - 1) / threads, 1);
  const int blocks = int(std::min<int64_t>({needed, int64_t(sm_count) * std::max(per_sm, 1), int64_t(max_blocks)}));
  kernel<<<blocks, threads, smem, stream>>>(x, y, n, out);
  return blocks;
}

// Launch version `variant` (1 = tree as in the book, 2 = tree fixed, 3 = shuffle,
// 4 = 16-byte) with `threads` per block. Each block's sum goes to out[0] by atomicAdd
// (atomic), or to partial[block], after which one block of 1024 threads sums the partials
// into out[0] (second pass). partial holds max_blocks <= 1024 floats. Returns the launch status.
template <bool kDot>
cudaError_t launch_reduce(int variant, int threads, bool atomic, const float* x, const float* y, int64_t n,
                          float* out, float* partial, int max_blocks, int sm_count, cudaStream_t stream) {
  const size_t smem = variant <= 2 ? threads * sizeof(float) : 0;
  const int64_t work = variant == 4 ? n / 4 : n;  // one float4 per thread per pass for the 16-byte version
  float* dst = atomic ? out : partial;
  if (atomic) cudaMemsetAsync(out, 0, sizeof(float), stream);
  int blocks = 0;
  const auto go = [&](auto kernel) {
    blocks = launch_resident(kernel, threads, smem, work, max_blocks, sm_count, stream, x, y, n, dst);
  };
  if (atomic) {
    if (variant == 1) go(tree_kernel<kDot, true, true>);
    else if (variant == 2) go(tree_kernel<kDot, true, false>);
    else if (variant == 3) go(shuffle_kernel<kDot, true>);
    else go(vec16_kernel<kDot, true, 4>);
  } else {
    if (variant == 1) go(tree_kernel<kDot, false, true>);
    else if (variant == 2) go(tree_kernel<kDot, false, false>);
    else if (variant == 3) go(shuffle_kernel<kDot, false>);
    else go(vec16_kernel<kDot, false, 4>);
    shuffle_kernel<false, false><<<1, 1024, 0, stream>>>(partial, nullptr, blocks, out);
  }
  return cudaGetLastError();
}

cudaError_t launch_sum(int variant, int threads, bool atomic, const float* x, int64_t n, float* out,
                       float* partial, int max_blocks, int sm_count, cudaStream_t stream) {
  return launch_reduce<false>(variant, threads, atomic, x, nullptr, n, out, partial, max_blocks, sm_count, stream);
}

cudaError_t launch_dot(int variant, int threads, bool atomic, const float* x, const float* y, int64_t n,
                       float* out, float* partial, int max_blocks, int sm_count, cudaStream_t stream) {
  return launch_reduce<true>(variant, threads, atomic, x, y, n, out, partial, max_blocks, sm_count, stream);
}

cudaError_t launch_read(int unroll, int threads, const float* x, int64_t n, unsigned* sink, int sm_count,
                        cudaStream_t stream) {
  cudaMemsetAsync(sink, 0, sizeof(unsigned), stream);
  const auto go = [&](auto kernel) {
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0);
    const int64_t needed = std::max<int64_t>((n / 4 + threads - 1) / threads, 1);
    const int blocks = int(std::min<int64_t>(needed, int64_t(sm_count) * std::max(per_sm, 1)));
    kernel<<<blocks, threads, 0, stream>>>(x, n, sink);
  };
  if (unroll == 1) go(read_kernel<1>);
  else if (unroll == 2) go(read_kernel<2>);
  else if (unroll == 4) go(read_kernel<4>);
  else go(read_kernel<8>);
  return cudaGetLastError();
}
