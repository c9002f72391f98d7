/* What the bus may include: libc, nats.c, yajl, OpenSSL and the layers below it. */
#include <stdint.h>
#include <nats/nats.h>
#include <yajl/yajl_tree.h>
#include <openssl/ssl.h>
#include "../common/log.h"
