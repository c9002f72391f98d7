/* The fuzz targets' side of stub_sock.c. */
#ifndef GUST_FUZZ_STUB_SOCK_H
#define GUST_FUZZ_STUB_SOCK_H

#include <stddef.h>

/* The peer's bytes from now on, read chunk_size at a time; what is written is cleared. */
void stub_sock_feed(const unsigned char *data, size_t len, size_t chunk_size);
/* 1 while some of them are still to be read. */
int stub_sock_left(void);
extern unsigned char stub_sock_written[1 << 16];
extern size_t stub_sock_written_len;

#endif
