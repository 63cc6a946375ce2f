/* gin result codes: 0 success, negative errors. Shared by host and device. */
#ifndef GIN_RESULT_H
#define GIN_RESULT_H

#include "gin/api.h"

typedef int gin_result_t;

#define GIN_SUCCESS 0
#define GIN_ERR_INVALID (-1)     /* a bad argument; gin_last_error names it */
#define GIN_ERR_NOMEM (-2)       /* out of host or device memory */
#define GIN_ERR_SYSTEM (-3)      /* an OS call failed (errno in the message) */
#define GIN_ERR_TIMEOUT (-4)     /* a bounded wait expired */
#define GIN_ERR_ABORTED (-5)     /* the communicator was aborted */
#define GIN_ERR_UNSUPPORTED (-6) /* not supported by this path/transport */
#define GIN_ERR_AGAIN (-7)       /* no resources now; retry later */
#define GIN_ERR_REMOTE (-8)      /* a peer failed or died (named) */
#define GIN_ERR_CUDA (-9)        /* a CUDA call failed */
#define GIN_ERR_STATE (-10)      /* wrong state (destroyed, not live) */
#define GIN_ERR_PROTOCOL (-11)   /* malformed or unauthenticated bytes */
#define GIN_ERR_INTERNAL (-12)   /* a bug in gin */

#endif
