/*
 * Settings of the target glue. Each is read by one target's library only,
 * yet declared here, in a file both libraries compile, so that every build
 * lists every setting (gin_param_info, `ginrun --env`) with the target it
 * belongs to. The readers are in arch_cuda.c, vmm.c and arch_host.c;
 * GIN_MPS also in src/comm/comm.c and ginrun.
 */
#include "arch/arch.h"

GIN_PARAM_TARGET_INT(
    "cuda", gin_arch_param_cuda_device, "CUDA_DEVICE", -1,
    "GPU of this rank: -1 picks local rank modulo the GPU count "
    "(local rank from ginrun, Open MPI, Slurm or torchrun), "
    "-2 keeps the current device, N uses GPU N")

GIN_PARAM_TARGET_INT(
    "cuda", gin_arch_param_copy_batch, "COPY_BATCH", 1,
    "1: the proxy submits small copies as one cudaMemcpyBatchAsync; "
    "0: one cudaMemcpyAsync each")

GIN_PARAM_TARGET_INT("cuda", gin_arch_param_copy_streams, "COPY_STREAMS", 8,
                     "streams (1-8) the proxy spreads the large copies of one "
                     "submission over, so several copy engines work at once")

GIN_PARAM_TARGET_INT(
    "cuda", gin_arch_param_cuda_vmm, "CUDA_VMM", -1,
    "shareable device memory (windows, signals): 1 cuMemCreate, "
    "its descriptor duplicated by peers with pidfd_getfd; 0 "
    "cudaMalloc and CUDA IPC handles; -1 the first where the "
    "driver, the kernel and every peer of each communicator "
    "allow it, else the second")

GIN_PARAM_TARGET_INT(
    "host", gin_arch_param_host_spins, "HOST_SPINS", -1,
    "host target: polls of a device wait before it starts to "
    "yield its core (at least 64); -1: 4096 where this process "
    "may run on at least 4 CPUs per rank on this machine, else 64")

GIN_PARAM_TARGET_INT(
    "cuda", gin_arch_param_mps, "MPS", 1,
    "1: ginrun starts an MPS control daemon for a job whose ranks would "
    "share a GPU that no MPS daemon serves, and gin_comm_init warns once "
    "when ranks share a GPU without MPS; 0: neither")
