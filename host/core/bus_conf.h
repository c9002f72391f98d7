/* The bus a host.conf asks for: its nats block as the bus's configuration, for the
 * host process and for the tools that connect as it does (gust replay). */
#ifndef GUST_CORE_BUS_CONF_H
#define GUST_CORE_BUS_CONF_H

#include "../bus/bus.h"
#include "config.h"

/* Strings borrowed from c. The link (TLS, credentials) is left to
 * gust_nats_link_conf_load (../bus/link_conf.h), which checks files and can fail. */
struct gust_bus_conf gust_config_bus_conf(const struct gust_config *c);

#endif
