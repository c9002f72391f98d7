/* JSON output is part of the plugin SDK: declared in gust/sdk.h. */
#ifndef GUST_COMMON_JSON_OUT_H
#define GUST_COMMON_JSON_OUT_H

#include "gust/sdk.h"

#endif
