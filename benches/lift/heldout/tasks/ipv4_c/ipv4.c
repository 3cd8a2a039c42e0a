#include <stdlib.h>

#include "ipv4.h"

int ipv4_parse(const char *text, uint32_t *addr) {
    (void)text;
    (void)addr;
    abort(); /* not implemented */
}

void ipv4_format(uint32_t addr, char *buf) {
    (void)addr;
    (void)buf;
    abort(); /* not implemented */
}

int ipv4_cidr_contains(const char *cidr, uint32_t addr) {
    (void)cidr;
    (void)addr;
    abort(); /* not implemented */
}
