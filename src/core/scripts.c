/* scripts.c -- look up embedded scripts by name. */
#include "scripts.h"

#include <string.h>

const rl_script_t *rl_script_find(const char *name) {
    for (const rl_script_t *s = rl_scripts; s->name; s++)
        if (strcmp(s->name, name) == 0) return s;
    return NULL;
}

const rl_script_t *rl_script_guarded(const rl_script_t *s) {
    return s && s->guarded >= 0 ? &rl_scripts[s->guarded] : NULL;
}
