/* GIN_API marks what the shared libraries export: the public API, and the
 * few names that the inline device code of the public headers refers to.
 * Everything else in the libraries is hidden (-fvisibility=hidden). */
#ifndef GIN_API_H
#define GIN_API_H

#if defined(__GNUC__) || defined(__clang__)
#define GIN_API __attribute__((visibility("default")))
#else
#define GIN_API
#endif

#endif
