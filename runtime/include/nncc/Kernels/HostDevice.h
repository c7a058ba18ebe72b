/*
 * HostDevice.h - the one definition of NNCC_HD.
 *
 * NNCC_HD marks a function that the CPU kernels (lib/Kernels, the runtime)
 * and the CUDA kernels (include/nncc/Kernels/CUDA) both run: __host__
 * __device__ and forced inline under nvcc, inline in C++, static inline in
 * C (C99 inline alone would need an external definition somewhere). Plain
 * C, C++ and CUDA: nncc/Runtime/Philox.h, a C header, uses it too.
 */
#ifndef NNCC_KERNELS_HOSTDEVICE_H
#define NNCC_KERNELS_HOSTDEVICE_H

#if defined(__CUDACC__)
#define NNCC_HD __host__ __device__ __forceinline__
#elif defined(__cplusplus)
#define NNCC_HD inline
#else
#define NNCC_HD static inline
#endif

#endif /* NNCC_KERNELS_HOSTDEVICE_H */
