//===- GradientOpInterface.cpp - reverse-mode rules on ops ------*- C++ -*-===//

#include "nncc/Interfaces/GradientOpInterface.h"

using namespace mlir;

nncc::GradientBuilder::~GradientBuilder() = default;

#include "nncc/Interfaces/GradientOpInterface.cpp.inc"
