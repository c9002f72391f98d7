/* Taking a subscription out of service without freeing it under nats.c's reader thread.
 *
 * nats.c 3.4.1 (Debian 12's) looks a subscription up for an incoming message, lets go of
 * the connection's lock, and only then locks the subscription, without holding a
 * reference to it (conn.c natsConn_processMsg; fixed upstream after 3.4.1). A
 * subscription destroyed in that window is freed under the reader, which then locks
 * freed memory. So a subscription on a connection that stays open is unsubscribed at once
 * (no new message finds it) and freed a while later, when no reader can still be inside
 * that window. */
#ifndef GUST_BUS_RETIRE_H
#define GUST_BUS_RETIRE_H

#include <nats/nats.h>

/* Unsubscribes sub, a subscription on nc, now and destroys it after at least
 * GUST_RETIRE_MS. NULL is ignored. */
void gust_retire_sub(natsConnection *nc, natsSubscription *sub);

/* Stops a KV watcher on nc now (its subscription) and destroys it later, the same way. */
void gust_retire_watcher(natsConnection *nc, kvWatcher *w);

/* Destroys what was retired on nc, however recent, once nc is closed
 * (natsConnection_Close joins its reader thread). */
void gust_retire_closed(natsConnection *nc);

#define GUST_RETIRE_MS 2000

#endif
