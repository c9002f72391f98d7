/* The bus's view of an event loop (../bus/loop.h) over h2o's: what the ingest link
 * runs on. */
#ifndef GUST_HTTP_LOOP_H2O_H
#define GUST_HTTP_LOOP_H2O_H

#ifndef H2O_USE_LIBUV
#define H2O_USE_LIBUV 0
#endif
#include <h2o.h>

#include "../bus/loop.h"

/* loop is borrowed: it must outlive every watch and timer made through the table. */
struct gust_loop gust_loop_h2o(h2o_loop_t *loop);

#endif
