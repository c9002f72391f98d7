/* Telling systemd how the service is doing (Type=notify): READY=1 once serving,
 * RELOADING=1 then READY=1 around a reload, STOPPING=1 at shutdown. It is a datagram to
 * $NOTIFY_SOCKET, a few lines, so no libsystemd. Without NOTIFY_SOCKET it does nothing. */
#ifndef GUST_CORE_SD_NOTIFY_H
#define GUST_CORE_SD_NOTIFY_H

/* Sends state ("READY=1\nSTATUS=...") as one datagram; errors are ignored, as systemd's
 * own sd_notify callers do. */
void gust_sd_notify(const char *state);
/* RELOADING=1 with MONOTONIC_USEC, which systemd wants with it. */
void gust_sd_notify_reloading(void);

#endif
