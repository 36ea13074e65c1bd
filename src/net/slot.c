/* slot.c -- key slots and cluster key names (see slot.h). */
#include "slot.h"

#include <string.h>

/* CRC16 with polynomial 0x1021, initial value 0, no reflection (XMODEM),
 * the checksum Redis Cluster hashes keys with; one bit at a time: a key
 * is short and this runs once per round, not per byte sent. */
static uint16_t crc16(const unsigned char *p, size_t n) {
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++) crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

/* Finds key's hash tag: sets *at and *n and returns 1, else returns 0. */
static int find_tag(const char *key, size_t len, size_t *at, size_t *n) {
    const char *open = memchr(key, '{', len);
    if (!open) return 0;
    size_t start = (size_t)(open - key) + 1;
    const char *close = memchr(key + start, '}', len - start);
    if (!close || close == key + start) return 0;
    *at = start;
    *n = (size_t)(close - (key + start));
    return 1;
}

uint16_t rl_key_slot(const char *key, size_t len) {
    size_t at, n;
    if (find_tag(key, len, &at, &n)) return crc16((const unsigned char *)key + at, n) & (RL_SLOTS - 1);
    return crc16((const unsigned char *)key, len) & (RL_SLOTS - 1);
}

int rl_key_has_tag(const char *key, size_t len) {
    size_t at, n;
    return find_tag(key, len, &at, &n);
}

/* 1 when key's last sn bytes are the string s. */
static int ends_with(const char *key, size_t len, const char *s, size_t sn) {
    return len > sn && !memcmp(key + len - sn, s, sn);
}

/* The length of key without the suffixes the library adds to a resource:
 * its auxiliary keys' (fence counter, a store's seen token, a writer's
 * mark) and permit slots' ":permit:<n>", as often as they are stacked
 * (a semaphore on a resource named like a slot key). */
static size_t resource_len(const char *key, size_t len) {
    static const char *const aux[] = {":redlock:fence-seen", ":redlock:fence", ":redlock:writer"};
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < sizeof aux / sizeof *aux && !again; i++)
            if (ends_with(key, len, aux[i], strlen(aux[i]))) {
                len -= strlen(aux[i]);
                again = 1;
            }
        size_t d = len;
        while (d > 0 && key[d - 1] >= '0' && key[d - 1] <= '9') d--;
        if (d < len && ends_with(key, d, ":permit:", 8)) {
            len = d - 8;
            again = 1;
        }
    }
    return len;
}

size_t rl_cluster_key(char *out, size_t cap, const char *key, size_t len) {
    int tagged = rl_key_has_tag(key, len);
    size_t need = len + (tagged ? 0 : RL_CLUSTER_KEY_EXTRA);
    if (need + 1 > cap) return 0;
    if (tagged) {
        memcpy(out, key, len);
    } else {
        size_t base = resource_len(key, len);
        out[0] = '{';
        memcpy(out + 1, key, base);
        out[base + 1] = '}';
        memcpy(out + base + 2, key + base, len - base);
    }
    out[need] = '\0';
    return need;
}
