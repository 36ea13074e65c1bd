/* scripts.h -- the Lua scripts of lua/, embedded at build time. */
#ifndef RL_SCRIPTS_H
#define RL_SCRIPTS_H
#include <stddef.h>

typedef struct rl_script {
    const char *name; /* file name without .lua */
    const char *text;
    size_t len;
    const char *sha1; /* 40 lowercase hex chars, for EVALSHA */
    int guarded;      /* index of its twin with the membership guard ahead of it, or -1 */
} rl_script_t;

/* Generated table, ended by an entry whose name is NULL. */
extern const rl_script_t rl_scripts[];

/* Returns the script called name, or NULL. */
const rl_script_t *rl_script_find(const char *name);

/* The guarded twin of s (the membership record checked first, the
 * handle's fingerprint as an extra first argument), or NULL. */
const rl_script_t *rl_script_guarded(const rl_script_t *s);

#endif
