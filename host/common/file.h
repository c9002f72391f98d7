/* Whole files into memory: part of the plugin SDK, declared in gust/sdk.h. */
#ifndef GUST_COMMON_FILE_H
#define GUST_COMMON_FILE_H

#include "gust/sdk.h"

#endif
