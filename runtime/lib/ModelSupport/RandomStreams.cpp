//===- RandomStreams.cpp - seeds and draw offsets of the random ops -------===//
//
// docs/training.md, "Random streams": each op's Philox key mixed with the
// run seed, and the offset of a step's (and a micro-batch's) draws.
//
//===----------------------------------------------------------------------===//
#include "ModelState.h"

#include <cinttypes>

using namespace nncc::ms;

/// Random streams (docs/training.md, "Random streams"): a step's draws
/// start at draw step << 42 of each op's stream (RandomMasks.h counts draws), so
/// an op draws up to 2^42 values per step.
uint64_t nncc_ms_dropout_offset(const nncc_model *m) {
  return m ? static_cast<uint64_t>(m->optStep) << 42 : 0;
}

uint64_t nncc_ms_rng_offset(const nncc_model *m, uint64_t draws) {
  if (!m)
    return 0;
  uint64_t offset = nncc_ms_dropout_offset(m);
  const int64_t rows = batchRows(m);
  // Batch-major draws (sample b's are [b, b + 1) * draws / rows): sample b
  // of this call is sample sampleOffset + b of the batch.
  if (m->sampleOffset > 0 && rows > 0 && draws % static_cast<uint64_t>(rows) == 0)
    offset += static_cast<uint64_t>(m->sampleOffset) * (draws / static_cast<uint64_t>(rows));
  return offset;
}

/// murmur3's 64-bit finaliser: a bijection with mix(0) = 0, so run seed 0
/// keeps each op's own key (the streams of libraries before ABI 9).
static uint64_t mixSeed(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

uint64_t nncc_ms_rng_key(const nncc_model *m, uint64_t opSeed) {
  return m ? opSeed ^ mixSeed(m->rngSeed) : opSeed;
}

extern "C" nncc_status nncc_ms_set_seed(nncc_model *m, uint64_t seed, nncc_error *err) {
  if (nncc_status s = checkModel(m, "set_seed", err))
    return s;
  m->rngSeed = seed;
  m->trainReady = m->gradsValid = false; // residuals of other masks
  nncc_error_clear(err);
  return NNCC_OK;
}

extern "C" nncc_status nncc_ms_set_sample_offset(nncc_model *m, int64_t row, nncc_error *err) {
  if (nncc_status s = checkModel(m, "set_sample_offset", err))
    return s;
  if (row < 0)
    return nncc_error_set(err, NNCC_ERROR_INVALID_ARGUMENT,
                          "set_sample_offset: the row must be >= 0, got %" PRId64, row);
  if (row != m->sampleOffset)
    m->trainReady = m->gradsValid = false;
  m->sampleOffset = row;
  nncc_error_clear(err);
  return NNCC_OK;
}
