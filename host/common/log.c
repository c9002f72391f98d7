#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gust/sdk.h"

static atomic_int max_level = GUST_LOG_INFO;
static atomic_int json_lines;
static const char *const level_names[] = {"error", "warn", "info", "debug"};
/* syslog priorities: err, warning, info, debug */
static const char level_prio[] = {'3', '4', '6', '7'};

void gust_log_set_level(int level)
{
    atomic_store(&max_level, level);
}

void gust_log_set_json(int on)
{
    atomic_store(&json_lines, on);
}

int gust_log_enabled(int level)
{
    return level <= atomic_load(&max_level);
}

/* systemd sets JOURNAL_STREAM to the device and inode of the stream it connects to
 * stderr: when they match, journald stamps the time itself and reads a <N> prefix as
 * the line's priority. */
static int stderr_is_journal(void)
{
    static atomic_int known = -1;
    int v = atomic_load(&known);
    if (v >= 0) {
        return v;
    }
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev = 0, ino = 0;
    struct stat st;
    v = js != NULL && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
        (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
    atomic_store(&known, v);
    return v;
}

size_t gust_log_escape(const char *in, char *out, size_t size)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0, len = strlen(in);
    for (size_t i = 0; i < len && n + 5 < size; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c >= 0x80) {
            size_t k = 1;
            while (i + k < len && k < 4 && ((unsigned char)in[i + k] & 0xC0) == 0x80) {
                k++;
            }
            /* U+0080..U+009F (C2 80..C2 9F) are the C1 controls: CSI is one of them */
            int c1 = c == 0xC2 && k >= 2 && (unsigned char)in[i + 1] < 0xA0;
            if (!c1 && gust_utf8_valid(in + i, k)) {
                if (n + k + 1 > size) {
                    break;
                }
                memcpy(out + n, in + i, k);
                n += k;
                i += k - 1;
                continue;
            }
        }
        if (c >= 0x20 && c < 0x7f) {
            out[n++] = (char)c;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            out[n++] = '\\';
            out[n++] = c == '\n' ? 'n' : (c == '\r' ? 'r' : 't');
        } else {
            out[n++] = '\\';
            out[n++] = 'x';
            out[n++] = hex[c >> 4];
            out[n++] = hex[c & 15];
        }
    }
    out[n] = '\0';
    return n;
}

/* msg as a JSON string into out (NUL-terminated); bytes that are not UTF-8 become '?'. */
static size_t json_quote(char *out, size_t size, const char *msg)
{
    size_t n = 0;
    out[n++] = '"';
    size_t len = strlen(msg);
    for (size_t i = 0; i < len && n + 8 < size; i++) {
        unsigned char c = (unsigned char)msg[i];
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20) {
            n += (size_t)snprintf(out + n, size - n, "\\u%04x", c);
        } else if (c >= 0x80) {
            /* a multibyte sequence: taken whole when it is valid */
            size_t k = 1;
            while (i + k < len && k < 4 && ((unsigned char)msg[i + k] & 0xC0) == 0x80) {
                k++;
            }
            if (gust_utf8_valid(msg + i, k) && n + k + 2 < size) {
                memcpy(out + n, msg + i, k);
                n += k;
                i += k - 1;
            } else {
                out[n++] = '?';
            }
        } else {
            out[n++] = (char)c;
        }
    }
    out[n++] = '"';
    out[n] = '\0';
    return n;
}

void gust_log(int level, const char *fmt, ...)
{
    if (!gust_log_enabled(level)) {
        return;
    }
    char raw[1024], msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    /* Messages quote what peers sent (a server's -ERR, a broker's reason, a file's
     * contents): escaped here, once, no record is split by a CR LF and none carries a
     * terminal escape. */
    gust_log_escape(raw, msg, sizeof(msg));

    char line[2300];
    size_t n;
    char ts[GUST_RFC3339_SIZE];
    if (atomic_load(&json_lines)) {
        gust_rfc3339_ms(gust_clock_wall_ms(), ts);
        n = (size_t)snprintf(line, sizeof(line), "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":", ts,
                             level_names[level]);
        n += json_quote(line + n, sizeof(line) - n - 2, msg);
        line[n++] = '}';
    } else if (stderr_is_journal()) {
        n = (size_t)snprintf(line, sizeof(line), "<%c>[%s] %s", level_prio[level], level_names[level], msg);
    } else {
        gust_rfc3339_ms(gust_clock_wall_ms(), ts);
        n = (size_t)snprintf(line, sizeof(line), "%s [%s] %s", ts, level_names[level], msg);
    }
    if (n > sizeof(line) - 2) {
        n = sizeof(line) - 2;
    }
    /* One write per line so lines from several threads never interleave. */
    line[n++] = '\n';
    fwrite(line, 1, n, stderr);
}
