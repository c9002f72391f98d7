/* Checking a "Name: value" header line from host.conf, for the plugins that speak HTTP
 * (http_out, http_poll). Compiled into each of them. */
#ifndef GUST_PLUGINS_HTTP_HEADER_H
#define GUST_PLUGINS_HTTP_HEADER_H

/* NULL when h is a usable "Name: value" line, else what is wrong with it. */
const char *gust_http_header_problem(const char *h);

#endif
