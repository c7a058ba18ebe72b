//===- RecurrentPackTests.cpp - W_hh panels of the AVX-512 recurrent scan -===//
//
// fastScanPack (runtime/lib/Kernels/RecurrentFast.cpp: 16 x 16 register
// transposes on AVX-512, else a scalar gather) against the panel layout the
// scan reads, written out here: panels of 16-unit groups, [H (k)][NV vectors
// of 16], a group's G gates side by side (the Elman RNN: 4 groups a panel),
// units past H zero. Every cell the scan runs, H from 1 to 70 (tails in
// both the unit and the k direction), bit for bit.
//
//===----------------------------------------------------------------------===//
#include "RecurrentCommon.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"

using namespace nncc::kernels;

TEST(RecurrentPack, PanelsOfEveryCellAndSize) {
  for (int cell : {(int)CellLstm, (int)CellGru, (int)CellRnnTanh, (int)CellRnnRelu})
    for (int64_t H = 1; H <= 70; ++H) {
      const int G = cell_gates(cell), U = G == 1 ? 4 : 1, NV = G * U;
      const int64_t P = ((H + 15) / 16 + U - 1) / U;
      ASSERT_EQ(fastScanPackedFloats(cell, H), P * NV * 16 * H);
      std::vector<float> whh(G * H * H);
      for (size_t i = 0; i < whh.size(); ++i)
        whh[i] = float(i) * 0.5f + 1.0f; // distinct, exact
      std::vector<float> got(P * NV * 16 * H, -7.0f);
      fastScanPack(cell, H, whh.data(), got.data());
      for (int64_t p = 0; p < P; ++p)
        for (int64_t k = 0; k < H; ++k)
          for (int u = 0; u < U; ++u)
            for (int g = 0; g < G; ++g)
              for (int l = 0; l < 16; ++l) {
                const int64_t j = (p * U + u) * 16 + l;
                const float want = j < H ? whh[(g * H + j) * H + k] : 0.0f;
                const float have = got[((p * H + k) * NV + u * G + g) * 16 + l];
                ASSERT_EQ(std::memcmp(&have, &want, sizeof(float)), 0)
                    << "cell " << cell << " H " << H << " panel " << p << " k " << k
                    << " group " << u << " gate " << g << " lane " << l;
              }
    }
}
