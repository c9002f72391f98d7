/* host/cluster/bucket.c: the entries of the lease bucket are JSON written and read as
 * such (a quote or a backslash in a name once broke them: they were written with "%s"
 * and read with strstr), and an entry's writer is known gone only when it surely is. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../../host/cluster/bucket.h"
#include "../../check.h"

static void round_trip(const char *label, const struct gust_entry *in)
{
    struct gust_buf b = {0};
    CHECK(gust_entry_write(in, &b) == 0);
    CHECK(gust_buf_append(&b, "", 1) == 0);
    struct gust_entry out;
    gust_entry_read(b.data, &out);
    CHECK_STR(out.holder, in->holder, "%s", label);
    CHECK_STR(out.instance, in->instance, "%s", label);
    CHECK_STR(out.host, in->host, "%s", label);
    CHECK_STR(out.space, in->space, "%s", label);
    CHECK_STR(out.config, in->config, "%s", label);
    CHECK(out.pid == in->pid);
    CHECK(out.expires_ms == in->expires_ms);
    gust_buf_free(&b);
}

int main(void)
{
    const struct gust_entry *me = gust_self_entry();
    CHECK(strlen(me->instance) == GUST_INSTANCE_LEN);
    CHECK(me->pid == (long)getpid());

    struct gust_entry e = *me;
    snprintf(e.holder, sizeof(e.holder), "a\"b\\c\",\"expires_ms\":1");
    snprintf(e.host, sizeof(e.host), "h\"ost");
    e.expires_ms = 1767225600123LL;
    round_trip("quotes and backslashes", &e);
    snprintf(e.config, sizeof(e.config), "0123456789abcdef");
    round_trip("with a config", &e);

    /* the old format, and what is not an entry */
    struct gust_entry old;
    gust_entry_read("{\"holder\":\"node-a\",\"expires_ms\":42}", &old);
    CHECK_STR(old.holder, "node-a", "old format");
    CHECK(old.expires_ms == 42 && old.instance[0] == '\0');
    const char *junk[] = {"", "{", "[1]", "{\"holder\":7,\"expires_ms\":\"9\"}", "\"x\"", NULL};
    for (int i = 0; junk[i] != NULL; i++) {
        struct gust_entry j;
        gust_entry_read(junk[i], &j);
        CHECK(j.expires_ms == 0 && j.holder[0] == '\0');
    }

    /* gone: only a process of this kernel and pid namespace whose pid is free */
    pid_t child = fork();
    if (child == 0) {
        _exit(0);
    }
    waitpid(child, NULL, 0);
    struct gust_entry dead = *me;
    snprintf(dead.instance, sizeof(dead.instance), "%032d", 1);
    dead.pid = (long)child;
    CHECK(me->space[0] == '\0' || gust_entry_gone(&dead));
    struct gust_entry alive = dead;
    alive.pid = (long)getppid();
    CHECK(!gust_entry_gone(&alive));
    struct gust_entry elsewhere = dead;
    snprintf(elsewhere.space, sizeof(elsewhere.space), "another-kernel/1");
    CHECK(!gust_entry_gone(&elsewhere));
    struct gust_entry predecessor = dead;
    predecessor.pid = (long)getpid();
    CHECK(me->space[0] == '\0' || gust_entry_gone(&predecessor));
    CHECK(!gust_entry_gone(me)); /* ourselves */
    CHECK(!gust_entry_gone(&old)); /* no space: wait for its TTL */
    return check_result("bucket");
}
