#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H

// pkg-config adds the include directory; Debian also keeps it under postgresql/.
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif

#include <poll.h>

#endif
