/* Flows from script text, for tests: the text goes to a temporary .lua file that is
 * removed once the flow is loaded. */
#ifndef GUST_TEST_SCRIPTS_H
#define GUST_TEST_SCRIPTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flow.h"

/* The same with more options (script_path is set here). */
static inline int flow_from_text_opts(const char *text, struct gust_flow_opts opts, struct gust_flow **f,
                                      struct gust_err *err)
{
    char path[] = "/tmp/gust-flow-test-XXXXXX.lua";
    int fd = mkstemps(path, 4);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        perror("flow_from_text");
        exit(2);
    }
    close(fd);
    opts.script_path = path;
    int rc = gust_flow_create(&opts, f, err);
    unlink(path);
    return rc;
}

static inline int flow_from_text(const char *text, long timeout_ms, struct gust_flow **f,
                                 struct gust_err *err)
{
    struct gust_flow_opts opts = {.timeout_ms = timeout_ms};
    return flow_from_text_opts(text, opts, f, err);
}

#endif
