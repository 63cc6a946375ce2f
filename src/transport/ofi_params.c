/*
 * Settings of the ofi transport. Only a build with libfabric reads them
 * (ofi.c), yet they are declared here, in a file every build compiles, so
 * that every build lists every setting (gin_param_info, `ginrun --env`),
 * marked as the ofi transport's.
 */
#include "base/base.h"
#include "transport/ofi.h"

GIN_PARAM_TARGET_STR(
    "ofi", gin_ofi_param_provider, "OFI_PROVIDER", "",
    "libfabric provider of the ofi transport, e.g. tcp;ofi_rxm, shm, "
    "verbs;ofi_rxm, efa, cxi; empty: the first fi_getinfo offers with what "
    "gin needs (FI_PROVIDER narrows it too)")

GIN_PARAM_TARGET_INT(
    "ofi", gin_ofi_param_rma, "OFI_RMA", -1,
    "-1: large puts go as RMA writes where the provider has them (remote "
    "CQ data), but with the software providers tcp and shm; 1: with those "
    "too; 0: every put as messages")

GIN_PARAM_TARGET_INT("ofi", gin_ofi_param_rma_min, "OFI_RMA_MIN", 65536,
                     "smallest put (bytes) the ofi transport sends as RMA "
                     "writes")
