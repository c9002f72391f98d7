/* Buffers are part of the plugin SDK: declared in gust/sdk.h. */
#ifndef GUST_COMMON_BUF_H
#define GUST_COMMON_BUF_H

#include "gust/sdk.h"

#endif
