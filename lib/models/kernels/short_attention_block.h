// Attention over short sequences, one (jet, head) per thread block: a jet's ~15
// tokens fit in shared memory whole, so one block loads its q, k and v rows,
// forms the L x L scores, softmaxes them and writes its output rows, with no tile
// padded to the 128 rows flash attention's kernels work in (whose backward was a
// quarter of a GN2 step on the card: docs/performance.md).
//
// Torch-free: compiled by nvcc for the card (short_attention.cu) and by the C++
// compiler for the tests, which run a block as one thread (tid 0 of 1 does every
// element of a phase; the block syncs between phases are then no-ops).
//
// Layout, as flash_varlen's: qkv holds packed rows sorted jet by jet, jet b's
// rows starts[b] .. starts[b+1]; row r's query of head h is at columns h*dh ..,
// its key at D + h*dh, its value at 2D + h*dh (the view [N, 3, H, dh]). out and
// the output gradient are [N, D] rows with head h at columns h*dh.
#pragma once
#include <cmath>
#include <cstdint>

#include "models/kernels/kernel_common.h"

namespace salt::models::short_attention {

struct Shape {
  int64_t qkv_stride = 0;  // elements between rows of qkv and of its gradient (3D when contiguous)
  int64_t out_stride = 0;  // elements between rows of out and of its gradient (D when contiguous)
  int64_t d = 0;           // D = heads * dh
  int heads = 0, dh = 0;
  int max_len = 0;         // the most rows of one jet: shared memory is sized for it
  float scale = 1.f;
};

// Shared memory rows are dh + 1 floats apart, so that threads reading the same
// column of consecutive rows hit different banks.
SALT_HD inline int row_pitch(int dh) { return dh + 1; }

SALT_HD inline int64_t forward_smem_floats(int max_len, int dh) {
  return 3LL * max_len * row_pitch(dh) + static_cast<int64_t>(max_len) * max_len;
}
SALT_HD inline int64_t backward_smem_floats(int max_len, int dh) {
  return 4LL * max_len * row_pitch(dh) + 2LL * max_len * max_len;
}

// Io: static float load(const T*) and static void store(T*, float).
using models::FloatIo;

// Loads rows [r0, r0 + len) of the columns col.. col + dh of src into dst (pitch
// row_pitch(dh)), times `factor`.
template <class T, class Io>
SALT_HD void load_rows(float* dst, const T* src, int64_t stride, int64_t r0, int64_t col, int len, int dh, float factor,
                       int tid, int threads) {
  const int pitch = row_pitch(dh);
  for (int e = tid; e < len * dh; e += threads) {
    const int i = e / dh, c = e % dh;
    dst[i * pitch + c] = Io::load(src + (r0 + i) * stride + col + c) * factor;
  }
}

// p[i * len + j] = softmax over j of p[i * len + j], one thread per row.
SALT_HD inline void softmax_rows(float* p, int len, int tid, int threads) {
  for (int i = tid; i < len; i += threads) {
    float* row = p + i * len;
    float most = row[0];
    for (int j = 1; j < len; ++j) most = row[j] > most ? row[j] : most;
    float sum = 0.f;
    for (int j = 0; j < len; ++j) {
      row[j] = expf(row[j] - most);
      sum += row[j];
    }
    const float inv = 1.f / sum;
    for (int j = 0; j < len; ++j) row[j] *= inv;
  }
}

// One block's jet and head: the jet's first row and length, the head's first
// column, and its q (times s.scale), k and v rows in shared memory, each s.max_len
// rows of row_pitch floats; `rest` is the shared memory after them.
struct JetHead {
  int64_t r0 = 0, col = 0;
  int len = 0;
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  float* rest = nullptr;
};

template <class T, class Io>
SALT_HD JetHead load_qkv(const T* qkv, const int64_t* starts, const Shape& s, int64_t jet, int head, float* smem,
                         int tid, int threads) {
  JetHead b;
  b.r0 = starts[jet];
  b.len = static_cast<int>(starts[jet + 1] - b.r0);
  b.col = static_cast<int64_t>(head) * s.dh;
  const int64_t rows = static_cast<int64_t>(s.max_len) * row_pitch(s.dh);
  load_rows<T, Io>(smem, qkv, s.qkv_stride, b.r0, b.col, b.len, s.dh, s.scale, tid, threads);
  load_rows<T, Io>(smem + rows, qkv, s.qkv_stride, b.r0, s.d + b.col, b.len, s.dh, 1.f, tid, threads);
  load_rows<T, Io>(smem + 2 * rows, qkv, s.qkv_stride, b.r0, 2 * s.d + b.col, b.len, s.dh, 1.f, tid, threads);
  b.q = smem;
  b.k = smem + rows;
  b.v = smem + 2 * rows;
  b.rest = smem + 3 * rows;
  return b;
}

// out = softmax(scale q k^T) v for one jet and one head. Every thread of the block
// calls it (the early return for an empty jet is the same for all of them).
template <class T, class Io>
SALT_HD void forward_block(const T* qkv, T* out, const int64_t* starts, const Shape& s, int64_t jet, int head,
                           int tid, int threads, float* smem) {
  const auto b = load_qkv<T, Io>(qkv, starts, s, jet, head, smem, tid, threads);
  if (b.len <= 0) return;
  const int len = b.len, dh = s.dh, pitch = row_pitch(dh);
  const float *q = b.q, *k = b.k, *v = b.v;
  float* p = b.rest;  // [len, len]
  SALT_BLOCK_SYNC();
  for (int e = tid; e < len * len; e += threads) {
    const int i = e / len, j = e % len;
    float acc = 0.f;
    for (int c = 0; c < dh; ++c) acc += q[i * pitch + c] * k[j * pitch + c];
    p[e] = acc;
  }
  SALT_BLOCK_SYNC();
  softmax_rows(p, len, tid, threads);
  SALT_BLOCK_SYNC();
  for (int e = tid; e < len * dh; e += threads) {
    const int i = e / dh, c = e % dh;
    float acc = 0.f;
    for (int j = 0; j < len; ++j) acc += p[i * len + j] * v[j * pitch + c];
    Io::store(out + (b.r0 + i) * s.out_stride + b.col + c, acc);
  }
}

// The gradient of forward_block's output for one jet and one head: the scores and
// their softmax are formed again (cheaper than keeping them at ~15 tokens), then
//   dV = P^T dO,  dP = dO V^T,  dS = P (dP - rowsum(P dP)),
//   dQ = scale dS K,  dK = scale dS^T Q,
// written into dqkv's q, k and v columns of the jet's rows (every element of
// dqkv belongs to exactly one jet and head, so each is written once).
template <class T, class Io>
SALT_HD void backward_block(const T* qkv, const T* dout, T* dqkv, const int64_t* starts, const Shape& s, int64_t jet,
                            int head, int tid, int threads, float* smem) {
  const auto b = load_qkv<T, Io>(qkv, starts, s, jet, head, smem, tid, threads);
  if (b.len <= 0) return;
  const int len = b.len, dh = s.dh, pitch = row_pitch(dh);
  const float *q = b.q, *k = b.k, *v = b.v;
  float* g = b.rest;                        // dO
  float* p = g + s.max_len * pitch;         // [len, len]: P
  float* ds = p + s.max_len * s.max_len;    // [len, len]: dP, then dS
  load_rows<T, Io>(g, dout, s.out_stride, b.r0, b.col, len, dh, 1.f, tid, threads);
  SALT_BLOCK_SYNC();
  for (int e = tid; e < len * len; e += threads) {
    const int i = e / len, j = e % len;
    float score = 0.f, dp = 0.f;
    for (int c = 0; c < dh; ++c) {
      score += q[i * pitch + c] * k[j * pitch + c];
      dp += g[i * pitch + c] * v[j * pitch + c];
    }
    p[e] = score;
    ds[e] = dp;
  }
  SALT_BLOCK_SYNC();
  softmax_rows(p, len, tid, threads);
  for (int i = tid; i < len; i += threads) {  // the same rows this thread softmaxed
    float dot = 0.f;
    for (int j = 0; j < len; ++j) dot += p[i * len + j] * ds[i * len + j];
    for (int j = 0; j < len; ++j) ds[i * len + j] = p[i * len + j] * (ds[i * len + j] - dot);
  }
  SALT_BLOCK_SYNC();
  for (int e = tid; e < len * dh; e += threads) {
    const int i = e / dh, c = e % dh;  // row i as query, key and value
    float dq = 0.f, dk = 0.f, dv = 0.f;
    for (int j = 0; j < len; ++j) {
      dq += ds[i * len + j] * k[j * pitch + c];
      dk += ds[j * len + i] * q[j * pitch + c];
      dv += p[j * len + i] * g[j * pitch + c];
    }
    T* row = dqkv + (b.r0 + i) * s.qkv_stride + b.col + c;
    Io::store(row, dq * s.scale);
    Io::store(row + s.d, dk);
    Io::store(row + 2 * s.d, dv);
  }
}

}  // namespace salt::models::short_attention
