/* mlua.c -- the simulated nodes' scripting: an embedded Lua 5.1, as
 * Redis's, running the scripts with KEYS and ARGV set and redis.call /
 * redis.pcall / redis.error_reply / redis.status_reply, and the replies
 * converted both ways as Redis converts them (integer <-> number, bulk
 * <-> string, nil -> false, status <-> {ok=...}, error <-> {err=...},
 * array <-> table; a Lua number back to an integer by truncation, true to
 * 1, false to nil). Compiled scripts are shared by every model (keyed by
 * sha1); each model keeps which ones it has loaded, so a restarted node
 * answers NOSCRIPT as Redis does. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model.h"

static lua_State *L; /* shared by every model: one thread */
static model_t *cur; /* the model whose script runs */

/* sha1 of the n bytes at p as 40 lowercase hex characters and a NUL. */
static void sha1_hex(const char *p, size_t n, char out[41]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(p, n, md, &len, EVP_sha1(), NULL);
    for (unsigned i = 0; i < 20; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* ------------------------------------------------- RESP -> Lua values */

/* Pushes the reply at p (n bytes, complete) as Lua sees it; returns its
 * length. *err is set when it is an error reply (pushed as {err=...}). */
static long push_reply(const char *p, size_t n, int *err) {
    long len = resp_reply_len(p, n);
    const char *eol = memchr(p, '\r', n);
    long long v = strtoll(p + 1, NULL, 10);
    switch (p[0]) {
    case ':': lua_pushnumber(L, (lua_Number)v); break;
    case '+':
    case '-':
        lua_newtable(L);
        lua_pushstring(L, p[0] == '+' ? "ok" : "err");
        lua_pushlstring(L, p + 1, (size_t)(eol - p - 1));
        lua_rawset(L, -3);
        if (p[0] == '-' && err) *err = 1;
        break;
    case '$':
        if (v < 0)
            lua_pushboolean(L, 0);
        else
            lua_pushlstring(L, eol + 2, (size_t)v);
        break;
    case '*': {
        if (v < 0) {
            lua_pushboolean(L, 0);
            break;
        }
        lua_checkstack(L, 4);
        lua_newtable(L);
        const char *q = eol + 2;
        for (long long i = 0; i < v; i++) {
            long k = push_reply(q, n - (size_t)(q - p), NULL);
            lua_rawseti(L, -2, (int)(i + 1));
            q += k;
        }
        break;
    }
    default: lua_pushboolean(L, 0);
    }
    return len;
}

/* --------------------------------------------------- redis.call/pcall */

/* redis.call (raise = 1) and redis.pcall: runs the command on the model. */
static int redis_call(lua_State *l, int raise) {
    int argc = lua_gettop(l);
    if (argc == 0) {
        lua_newtable(l);
        lua_pushstring(l, "err");
        lua_pushstring(l, "ERR Please specify at least one argument for this redis lib call");
        lua_rawset(l, -3);
        return raise ? lua_error(l) : 1;
    }
    const char **argv = malloc((size_t)argc * sizeof *argv);
    size_t *lens = malloc((size_t)argc * sizeof *lens);
    if (!argv || !lens) abort();
    for (int i = 0; i < argc; i++) {
        int t = lua_type(l, i + 1);
        if (t != LUA_TSTRING && t != LUA_TNUMBER) {
            free(argv);
            free(lens);
            lua_newtable(l);
            lua_pushstring(l, "err");
            lua_pushstring(l, "ERR Lua redis lib command arguments must be strings or integers");
            lua_rawset(l, -3);
            return raise ? lua_error(l) : 1;
        }
        argv[i] = lua_tolstring(l, i + 1, &lens[i]); /* a number becomes its "%.14g" string */
    }
    resp_cmd_t *cmd = resp_cmd_make(argc, argv, lens);
    free(argv);
    free(lens);
    sbuf_t out = {0};
    model_script_call(cur, cmd, &out);
    free(cmd);
    int err = 0;
    push_reply(sb_data(&out), sb_pending(&out), &err);
    sb_free(&out);
    if (err && raise) return lua_error(l);
    return 1;
}

static int l_call(lua_State *l) {
    return redis_call(l, 1);
}
static int l_pcall(lua_State *l) {
    return redis_call(l, 0);
}

/* redis.error_reply(msg) / redis.status_reply(msg): {err=msg} / {ok=msg}. */
static int l_reply(lua_State *l, const char *field) {
    luaL_checkstring(l, 1);
    lua_newtable(l);
    lua_pushstring(l, field);
    lua_pushvalue(l, 1);
    lua_rawset(l, -3);
    return 1;
}

static int l_error_reply(lua_State *l) {
    return l_reply(l, "err");
}
static int l_status_reply(lua_State *l) {
    return l_reply(l, "ok");
}

/* redis.sha1hex(s). */
static int l_sha1hex(lua_State *l) {
    size_t n;
    const char *s = luaL_checklstring(l, 1, &n);
    char hex[41];
    sha1_hex(s, n, hex);
    lua_pushstring(l, hex);
    return 1;
}

/* redis.log(level, ...): nothing is logged. */
static int l_log(lua_State *l) {
    (void)l;
    return 0;
}

/* Makes the shared Lua state with the libraries Redis opens (those the
 * scripts use) and the redis table, and the registry's script table. */
static void lua_setup(void) {
    if (L) return;
    if (!(L = luaL_newstate())) abort();
    lua_pushcfunction(L, luaopen_base), lua_call(L, 0, 0);
    lua_pushcfunction(L, luaopen_table), lua_call(L, 0, 0);
    lua_pushcfunction(L, luaopen_string), lua_call(L, 0, 0);
    lua_pushcfunction(L, luaopen_math), lua_call(L, 0, 0);
    static const luaL_Reg fns[] = {{"call", l_call},
                                   {"pcall", l_pcall},
                                   {"error_reply", l_error_reply},
                                   {"status_reply", l_status_reply},
                                   {"sha1hex", l_sha1hex},
                                   {"log", l_log},
                                   {NULL, NULL}};
    lua_newtable(L);
    for (const luaL_Reg *f = fns; f->name; f++) {
        lua_pushcfunction(L, f->func);
        lua_setfield(L, -2, f->name);
    }
    lua_pushnumber(L, 3);
    lua_setfield(L, -2, "LOG_WARNING");
    lua_setglobal(L, "redis");
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "sim_scripts");
}

/* Closes the shared Lua state (the compiled scripts go with it). */
void mlua_shutdown(void) {
    if (L) lua_close(L);
    L = NULL;
}

/* ---------------------------------------------------------- the cache */

int mlua_known(const model_t *m, const char *sha) {
    model_scripts_t *s = model_scripts((model_t *)m);
    for (size_t i = 0; i < s->n; i++)
        if (strncasecmp(s->sha[i], sha, 40) == 0) return 1;
    return 0;
}

/* m no longer knows any script (SCRIPT FLUSH, a restart). */
void mlua_forget(model_t *m) {
    model_scripts(m)->n = 0;
}

/* Remembers that m has sha loaded. */
static void remember(model_t *m, const char *sha) {
    model_scripts_t *s = model_scripts(m);
    if (mlua_known(m, sha)) return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        if (!(s->sha = realloc(s->sha, s->cap * sizeof *s->sha))) abort();
    }
    memcpy(s->sha[s->n++], sha, 41);
}

/* Pushes the compiled function of sha, compiling body (n bytes) when it
 * is new. Returns 0, or -1 with the compile error in err (nothing pushed). */
static int compiled(const char *sha, const char *body, size_t n, char *err, size_t errlen) {
    lua_getfield(L, LUA_REGISTRYINDEX, "sim_scripts");
    lua_getfield(L, -1, sha);
    if (!lua_isnil(L, -1) || !body) {
        lua_remove(L, -2);
        return 0;
    }
    lua_pop(L, 1);
    if (luaL_loadbuffer(L, body, n, "@user_script")) {
        snprintf(err, errlen, "ERR Error compiling script (new function): %s", lua_tostring(L, -1));
        lua_pop(L, 2);
        return -1;
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, sha);
    lua_remove(L, -2);
    return 0;
}

/* SCRIPT LOAD: compiles body once for every model, remembers it in m. */
int mlua_load(model_t *m, const char *body, size_t n, char sha[41], char *err, size_t errlen) {
    lua_setup();
    sha1_hex(body, n, sha);
    if (compiled(sha, body, n, err, errlen)) return -1;
    lua_pop(L, 1);
    remember(m, sha);
    return 0;
}

/* ------------------------------------------------ Lua values -> RESP */

/* Appends the Lua value on the top of the stack as Redis replies it, and
 * pops it. */
static void to_resp(sbuf_t *o) {
    int t = lua_type(L, -1);
    if (t == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        resp_bulk(o, s, n);
    } else if (t == LUA_TBOOLEAN) {
        if (lua_toboolean(L, -1))
            resp_int(o, 1);
        else
            resp_nil(o);
    } else if (t == LUA_TNUMBER) {
        resp_int(o, (long long)lua_tonumber(L, -1));
    } else if (t == LUA_TTABLE) {
        lua_getfield(L, -1, "err");
        if (lua_type(L, -1) == LUA_TSTRING) {
            const char *e = lua_tostring(L, -1);
            resp_error(o, e[0] == '-' ? e + 1 : e);
            lua_pop(L, 2);
            return;
        }
        lua_pop(L, 1);
        lua_getfield(L, -1, "ok");
        if (lua_type(L, -1) == LUA_TSTRING) {
            resp_status(o, lua_tostring(L, -1));
            lua_pop(L, 2);
            return;
        }
        lua_pop(L, 1);
        int n = 0;
        for (;; n++) { /* the array part up to the first nil */
            lua_rawgeti(L, -1, n + 1);
            int nil = lua_isnil(L, -1);
            lua_pop(L, 1);
            if (nil) break;
        }
        resp_array(o, n);
        for (int i = 1; i <= n; i++) {
            lua_rawgeti(L, -1, i);
            to_resp(o);
        }
    } else {
        resp_nil(o);
    }
    lua_pop(L, 1);
}

/* Sets the global name to a table of argv[from .. from+n-1]. */
static void set_args(const char *name, const resp_cmd_t *c, int from, int n) {
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushlstring(L, c->argv[from + i], c->len[from + i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setglobal(L, name);
}

/* Parses EVAL's numkeys (argument 2 of c): returns it, or -1 with the
 * error replied. */
static long long numkeys(const resp_cmd_t *c, sbuf_t *o) {
    char *end;
    long long k = strtoll(c->argv[2], &end, 10);
    if (*end || c->len[2] == 0) return resp_error(o, "ERR value is not an integer or out of range"), -1;
    if (k < 0) return resp_error(o, "ERR Number of keys can't be negative"), -1;
    if (k > c->argc - 3) return resp_error(o, "ERR Number of keys can't be greater than number of args"), -1;
    return k;
}

/* EVAL / EVALSHA: runs the script with KEYS and ARGV set, its result or
 * error appended to o as Redis replies it. */
void mlua_eval(model_t *m, const resp_cmd_t *c, int by_sha, sbuf_t *o) {
    lua_setup();
    long long nk = numkeys(c, o);
    if (nk < 0) return;
    char sha[41], err[512];
    if (by_sha) {
        if (c->len[1] != 40 || !mlua_known(m, c->argv[1])) {
            resp_error(o, "NOSCRIPT No matching script. Please use EVAL.");
            return;
        }
        for (int i = 0; i < 40; i++) sha[i] = (char)(c->argv[1][i] | 0x20);
        sha[40] = '\0';
        if (compiled(sha, NULL, 0, err, sizeof err) || lua_isnil(L, -1)) {
            lua_settop(L, 0);
            {
                resp_error(o, "NOSCRIPT No matching script. Please use EVAL.");
                return;
            }
        }
    } else {
        sha1_hex(c->argv[1], c->len[1], sha);
        if (compiled(sha, c->argv[1], c->len[1], err, sizeof err)) {
            resp_error(o, err);
            return;
        }
        remember(m, sha);
    }
    set_args("KEYS", c, 3, (int)nk);
    set_args("ARGV", c, 3 + (int)nk, c->argc - 3 - (int)nk);
    model_t *outer = cur;
    cur = m;
    int rc = lua_pcall(L, 0, 1, 0);
    cur = outer;
    if (rc == 0) {
        to_resp(o);
    } else if (lua_istable(L, -1)) { /* a redis.call error, raised */
        to_resp(o);
    } else {
        snprintf(err, sizeof err, "ERR Error running script (call to f_%s): %s", sha,
                 lua_tostring(L, -1) ? lua_tostring(L, -1) : "error");
        lua_pop(L, 1);
        resp_error(o, err);
    }
    lua_settop(L, 0);
}
