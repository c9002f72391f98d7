#include "bucket.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "../common/json_out.h"

static struct gust_entry self;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void make_self(void)
{
    unsigned char bytes[GUST_INSTANCE_LEN / 2];
    if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes)) {
        /* no entropy at all: time and pid still differ between two processes */
        uint64_t seed = (uint64_t)gust_clock_wall_ns() ^ ((uint64_t)getpid() << 40);
        for (size_t i = 0; i < sizeof(bytes); i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            bytes[i] = (unsigned char)(seed >> 56);
        }
    }
    for (size_t i = 0; i < sizeof(bytes); i++) {
        snprintf(self.instance + 2 * i, 3, "%02x", bytes[i]);
    }
    if (gethostname(self.host, sizeof(self.host) - 1) != 0) {
        snprintf(self.host, sizeof(self.host), "localhost");
    }
    self.host[sizeof(self.host) - 1] = '\0';
    self.pid = (long)getpid();
    char boot[40] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(boot, sizeof(boot), f) == NULL) {
            boot[0] = '\0';
        }
        boot[strcspn(boot, "\n")] = '\0';
        fclose(f);
    }
    struct stat ns;
    if (boot[0] != '\0' && stat("/proc/self/ns/pid", &ns) == 0) {
        snprintf(self.space, sizeof(self.space), "%s/%llu", boot, (unsigned long long)ns.st_ino);
    }
}

int gust_entry_gone(const struct gust_entry *e)
{
    const struct gust_entry *me = gust_self_entry();
    if (me->space[0] == '\0' || strcmp(e->space, me->space) != 0 || e->pid <= 0 ||
        strcmp(e->instance, me->instance) == 0) {
        return 0;
    }
    if (e->pid == me->pid) {
        return 1; /* another instance with our pid, in our namespace: it was before us */
    }
    return kill((pid_t)e->pid, 0) != 0 && errno == ESRCH;
}

const struct gust_entry *gust_self_entry(void)
{
    pthread_once(&self_once, make_self);
    return &self;
}

static void copy_string(yajl_val tree, const char *name, char *out, size_t size)
{
    const char *path[] = {name, NULL};
    yajl_val v = yajl_tree_get(tree, path, yajl_t_string);
    snprintf(out, size, "%s", v != NULL ? YAJL_GET_STRING(v) : "");
}

static int64_t get_int(yajl_val tree, const char *name)
{
    const char *path[] = {name, NULL};
    yajl_val v = yajl_tree_get(tree, path, yajl_t_number);
    return v != NULL && YAJL_IS_INTEGER(v) ? (int64_t)YAJL_GET_INTEGER(v) : 0;
}

void gust_entry_read(const char *value, struct gust_entry *e)
{
    memset(e, 0, sizeof(*e));
    yajl_val tree = value != NULL && value[0] != '\0' ? yajl_tree_parse(value, NULL, 0) : NULL;
    if (tree == NULL || !YAJL_IS_OBJECT(tree)) {
        yajl_tree_free(tree);
        return;
    }
    copy_string(tree, "holder", e->holder, sizeof(e->holder));
    copy_string(tree, "instance", e->instance, sizeof(e->instance));
    copy_string(tree, "host", e->host, sizeof(e->host));
    copy_string(tree, "space", e->space, sizeof(e->space));
    copy_string(tree, "config", e->config, sizeof(e->config));
    e->pid = (long)get_int(tree, "pid");
    e->expires_ms = get_int(tree, "expires_ms");
    yajl_tree_free(tree);
}

static int member(struct gust_buf *out, const char *name, const char *value, int first)
{
    int rc = gust_buf_printf(out, "%s\"%s\":", first ? "{" : ",", name);
    return rc != 0 ? rc : gust_json_append_string(out, value, strlen(value));
}

int gust_entry_write(const struct gust_entry *e, struct gust_buf *out)
{
    int rc = member(out, "holder", e->holder, 1);
    rc = rc != 0 ? rc : member(out, "instance", e->instance, 0);
    rc = rc != 0 ? rc : member(out, "host", e->host, 0);
    rc = rc != 0 ? rc : gust_buf_printf(out, ",\"pid\":%ld", e->pid);
    rc = rc != 0 ? rc : member(out, "space", e->space, 0);
    if (rc == 0 && e->config[0] != '\0') {
        rc = member(out, "config", e->config, 0);
    }
    return rc != 0 ? rc : gust_buf_printf(out, ",\"expires_ms\":%" PRId64 "}", e->expires_ms);
}

void gust_key_safe(char *s)
{
    for (; *s != '\0'; s++) {
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-' ||
              *s == '_' || *s == '=')) {
            *s = '_';
        }
    }
}

void gust_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t ms)
{
    struct timespec until;
    gust_clock_deadline(ms, &until);
    pthread_cond_timedwait(cond, lock, &until);
}
