/* The tests of ipv4.c: each runs in its own child process (a crash or a hang
 * fails that test alone); the summary is printed as node --test does. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipv4.h"

static int failed;
#define CHECK(cond) do { if (!(cond)) { printf("    %s:%d: %s\n", __FILE__, __LINE__, #cond); failed = 1; } } while (0)

static int parses_to(const char *text, uint32_t want) {
    uint32_t got = 0;
    return ipv4_parse(text, &got) == 0 && got == want;
}

static int rejected(const char *text) {
    uint32_t got = 12345;
    return ipv4_parse(text, &got) == -1 && got == 12345;
}

static int formats_to(uint32_t addr, const char *want) {
    char buf[16] = {0};
    ipv4_format(addr, buf);
    return strcmp(buf, want) == 0;
}

static void parse_simple(void) { CHECK(parses_to("192.168.1.10", 0xC0A8010Au)); }

static void parse_bounds(void) {
    CHECK(parses_to("0.0.0.0", 0));
    CHECK(parses_to("255.255.255.255", 0xFFFFFFFFu));
    CHECK(parses_to("10.0.0.1", 0x0A000001u));
}

static void parse_rejects_out_of_range(void) {
    CHECK(rejected("256.1.1.1"));
    CHECK(rejected("1.2.3.999"));
    CHECK(rejected("1.2.3.4294967297"));
}

static void parse_rejects_wrong_part_counts(void) {
    CHECK(parses_to("1.2.3.4", 0x01020304u));
    const char *bad[] = {"1.2.3", "1.2.3.4.5", "1..2.3", "", ".1.2.3", "1.2.3."};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(rejected(bad[i]));
}

static void parse_rejects_leading_zeros_signs_spaces(void) {
    CHECK(parses_to("0.10.0.0", 0x000A0000u));
    const char *bad[] = {"01.2.3.4", "1.2.3.00", "1.2.3.+4", "1.2.3.-4", " 1.2.3.4", "1.2.3.4 "};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(rejected(bad[i]));
}

static void parse_rejects_letters(void) {
    CHECK(parses_to("8.8.4.4", 0x08080404u));
    CHECK(rejected("a.b.c.d"));
    CHECK(rejected("1.2.3.4x"));
    CHECK(rejected("0x1.2.3.4"));
}

static void format_addresses(void) {
    CHECK(formats_to(0xC0A8010Au, "192.168.1.10"));
    CHECK(formats_to(0, "0.0.0.0"));
    CHECK(formats_to(0xFFFFFFFFu, "255.255.255.255"));
}

static void cidr_contains(void) {
    CHECK(ipv4_cidr_contains("10.0.0.0/8", 0x0A010203u) == 1);
    CHECK(ipv4_cidr_contains("10.0.0.0/8", 0x0B000001u) == 0);
}

static void cidr_edges(void) {
    CHECK(ipv4_cidr_contains("192.168.1.7/32", 0xC0A80107u) == 1);
    CHECK(ipv4_cidr_contains("192.168.1.7/32", 0xC0A80108u) == 0);
    CHECK(ipv4_cidr_contains("0.0.0.0/0", 0xDEADBEEFu) == 1);
    CHECK(ipv4_cidr_contains("192.168.1.0/24", 0xC0A801FFu) == 1);
    CHECK(ipv4_cidr_contains("192.168.1.0/24", 0xC0A80200u) == 0);
    CHECK(ipv4_cidr_contains("172.16.0.0/12", 0xAC1FFFFFu) == 1);
}

static void cidr_malformed(void) {
    const char *bad[] = {"10.0.0.0/33", "10.0.0.0", "10.0.0/8", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/08", "/8"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(ipv4_cidr_contains(bad[i], 0) == -1);
}

static const struct { const char *name; void (*run)(void); } TESTS[] = {
    {"parse_simple", parse_simple},
    {"parse_bounds", parse_bounds},
    {"parse_rejects_out_of_range", parse_rejects_out_of_range},
    {"parse_rejects_wrong_part_counts", parse_rejects_wrong_part_counts},
    {"parse_rejects_leading_zeros_signs_spaces", parse_rejects_leading_zeros_signs_spaces},
    {"parse_rejects_letters", parse_rejects_letters},
    {"format_addresses", format_addresses},
    {"cidr_contains", cidr_contains},
    {"cidr_edges", cidr_edges},
    {"cidr_malformed", cidr_malformed},
};

int main(void) {
    size_t n = sizeof TESTS / sizeof *TESTS, pass = 0;
    for (size_t i = 0; i < n; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(5);
            TESTS[i].run();
            fflush(stdout);
            _exit(failed);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        pass += ok;
        printf("%s %zu - %s%s\n", ok ? "ok" : "not ok", i + 1, TESTS[i].name,
               ok || WIFEXITED(status) ? "" : " (crashed or timed out)");
    }
    printf("# tests %zu\n# pass %zu\n# fail %zu\n", n, pass, n - pass);
    return pass == n ? 0 : 1;
}
