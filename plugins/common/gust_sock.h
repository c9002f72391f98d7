/* The socket/TLS client is part of the plugin SDK: declared in gust/sock.h. This file
 * stays only for plugins/mqtt, which includes it by this name. */
#ifndef GUST_PLUGINS_SOCK_H
#define GUST_PLUGINS_SOCK_H

#include "gust/sock.h"

#endif
