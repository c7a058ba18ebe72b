//===- KernelLaunchOpInterface.cpp - an nnk op's kernel call ----*- C++ -*-===//

#include "nncc/Interfaces/KernelLaunchOpInterface.h"

#include "nncc/Interfaces/KernelLaunchOpInterface.cpp.inc"
