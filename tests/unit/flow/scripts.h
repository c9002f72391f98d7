/* Flows from script text, for tests: the text goes to a temporary .lua file that is
 * removed once the flow is loaded. */
#ifndef GUST_TEST_SCRIPTS_H
#define GUST_TEST_SCRIPTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flow.h"

static inline int flow_from_text(const char *text, long timeout_ms, struct gust_flow **f,
                                 struct gust_err *err)
{
    char path[] = "/tmp/gust-flow-test-XXXXXX.lua";
    int fd = mkstemps(path, 4);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        perror("flow_from_text");
        exit(2);
    }
    close(fd);
    struct gust_flow_opts opts = {.script_path = path, .timeout_ms = timeout_ms};
    int rc = gust_flow_create(&opts, f, err);
    unlink(path);
    return rc;
}

#endif
