/* slot.h -- Redis Cluster key slots (doc/design.md, "Cluster routing"): which of the 16384
 * slots a key lives in, and the names the library's keys take on a
 * cluster node so that every key of one resource shares a slot. */
#ifndef RL_SLOT_H
#define RL_SLOT_H
#include <stddef.h>
#include <stdint.h>

#define RL_SLOTS 16384u

/* The slot of key (len bytes): CRC16-XMODEM of its hash tag (the bytes
 * between the first '{' and the first '}' after it, when there are any)
 * or of the whole key, mod 16384. */
uint16_t rl_key_slot(const char *key, size_t len);

/* 1 when key has a hash tag (a non-empty "{...}" as Redis reads it). */
int rl_key_has_tag(const char *key, size_t len);

/* The name key takes on a cluster node, written to out (cap bytes; NUL
 * ended): unchanged when key has a hash tag, else its resource part in
 * braces followed by the library's suffixes, so that "res",
 * "res:permit:3" and "res:permit:3:redlock:fence" become "{res}",
 * "{res}:permit:3" and "{res}:permit:3:redlock:fence". Returns the
 * length, or 0 when it does not fit. */
size_t rl_cluster_key(char *out, size_t cap, const char *key, size_t len);

/* Longest growth of a key by rl_cluster_key: the two braces. */
#define RL_CLUSTER_KEY_EXTRA 2u

#endif
