#include <stdio.h>
#include <string.h>

#include "ipv4.h"

/* A decimal number 0..max without leading zeros at *p; -1 if none. */
static long number(const char **p, long max) {
    const char *s = *p;
    long n = 0;
    int digits = 0;
    while (*s >= '0' && *s <= '9') {
        if (digits == 1 && n == 0) return -1;
        n = n * 10 + (*s - '0');
        if (n > max) return -1;
        s++;
        digits++;
    }
    if (digits == 0) return -1;
    *p = s;
    return n;
}

/* Reads an address at *p, leaving *p after it; -1 if malformed. */
static int address(const char **p, uint32_t *addr) {
    uint32_t a = 0;
    for (int i = 0; i < 4; i++) {
        if (i > 0 && *(*p)++ != '.') return -1;
        long part = number(p, 255);
        if (part < 0) return -1;
        a = (a << 8) | (uint32_t)part;
    }
    *addr = a;
    return 0;
}

int ipv4_parse(const char *text, uint32_t *addr) {
    uint32_t a;
    if (address(&text, &a) != 0 || *text != '\0') return -1;
    *addr = a;
    return 0;
}

void ipv4_format(uint32_t addr, char *buf) {
    snprintf(buf, 16, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 255, (addr >> 8) & 255, addr & 255);
}

int ipv4_cidr_contains(const char *cidr, uint32_t addr) {
    uint32_t net;
    if (address(&cidr, &net) != 0 || *cidr++ != '/') return -1;
    long bits = number(&cidr, 32);
    if (bits < 0 || *cidr != '\0') return -1;
    uint32_t mask = bits == 0 ? 0 : 0xFFFFFFFFu << (32 - bits);
    return (addr & mask) == (net & mask);
}
