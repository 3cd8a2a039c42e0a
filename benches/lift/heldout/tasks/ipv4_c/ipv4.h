/* IPv4 addresses: parsed, written, and matched against CIDR networks. */
#ifndef IPV4_H
#define IPV4_H

#include <stdint.h>

/* 0 and *addr set for a valid dotted address; -1 (addr untouched) otherwise. */
int ipv4_parse(const char *text, uint32_t *addr);

/* The dotted form of addr, in buf (at least 16 bytes). */
void ipv4_format(uint32_t addr, char *buf);

/* 1 if addr is in the network "a.b.c.d/n", 0 if not, -1 if cidr is malformed. */
int ipv4_cidr_contains(const char *cidr, uint32_t addr);

#endif
