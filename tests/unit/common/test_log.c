/* host/common/log.c: what peers send (a NATS server's -ERR, a broker's reason) reaches
 * the log as one printable record, whatever bytes it carries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../host/common/log.h"
#include "../../check.h"

static void escape_case(const char *label, const char *in, const char *want)
{
    char out[256];
    size_t n = gust_log_escape(in, out, sizeof(out));
    CHECK_STR(out, want, "%s", label);
    CHECK(n == strlen(out));
}

/* Logs msg through gust_log with stderr sent to a file; returns what was written. */
static char *logged(int json, const char *msg)
{
    static char text[4096];
    fflush(stderr);
    int saved = dup(2);
    FILE *f = tmpfile();
    dup2(fileno(f), 2);
    gust_log_set_json(json);
    gust_warn("server said: %s", msg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

static int count_char(const char *s, char c)
{
    int n = 0;
    for (; *s != '\0'; s++) {
        n += *s == c;
    }
    return n;
}

int main(void)
{
    escape_case("plain", "stream not found", "stream not found");
    escape_case("crlf", "-ERR 'x'\r\n2026 [error] forged", "-ERR 'x'\\r\\n2026 [error] forged");
    escape_case("esc", "\x1b[2J\x1b]0;title\x07", "\\x1b[2J\\x1b]0;title\\x07");
    escape_case("tab and del", "a\tb\x7f", "a\\tb\\x7f");
    escape_case("utf-8 kept", "caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac");
    escape_case("c1 csi", "x\xc2\x9b" "31m", "x\\xc2\\x9b31m");
    escape_case("bad utf-8", "a\xff\xc3(", "a\\xff\\xc3(");
    escape_case("empty", "", "");

    /* cut to fit: never past size, never half an escape */
    char small[8];
    size_t n = gust_log_escape("\r\r\r\r\r\r", small, sizeof(small));
    CHECK(n < sizeof(small));
    CHECK(n % 2 == 0);

    const char *hostile = "bad\r\n2026-01-01T00:00:00.000Z [error] forged\x1b[31m";
    const char *text = logged(0, hostile);
    CHECK(count_char(text, '\n') == 1);
    CHECK(strchr(text, '\r') == NULL);
    CHECK(strchr(text, '\x1b') == NULL);
    CHECK(strstr(text, "bad\\r\\n2026") != NULL);
    text = logged(1, hostile);
    CHECK(count_char(text, '\n') == 1);
    CHECK(strchr(text, '\x1b') == NULL);
    CHECK(strstr(text, "\"level\":\"warn\"") != NULL);
    return check_result("log");
}
