/* model.h -- a model of one Redis 7 master for the simulator: a keyspace
 * of strings and hashes with millisecond TTLs (expired lazily, as Redis
 * does on access: a key is gone once now > its expiry), the commands the
 * library sends and its Lua scripts use, MULTI/EXEC, pub/sub, and the
 * scripts themselves run by an embedded Lua 5.1 with redis.call and
 * redis.pcall (mlua.c), as Redis runs them. The node's clock is whatever
 * `now_us` each call passes (µs since the epoch on that node's clock), so
 * the simulator can drift and step it. test/sim/difftest.c checks it
 * reply for reply against a real redis-server. */
#ifndef SIM_MODEL_H
#define SIM_MODEL_H
#include <stddef.h>
#include <stdint.h>

#include "resp.h"
#include "sbuf.h"

typedef struct model model_t;
typedef struct model_session model_session_t;
typedef struct model_fx model_fx_t;

/* WAIT numreplicas timeout_ms from session s on a node with replicas: the
 * hook appends the reply to out, or appends nothing and blocks s's
 * connection until it answers later (simrepl.c). */
typedef void (*model_wait_fn)(void *arg, model_session_t *s, long long n, long long timeout_ms, sbuf_t *out);

/* A PUBLISH reached session s (subscribed to the channel): bytes is the
 * RESP push ["message", channel, payload] for s's connection. */
typedef void (*model_push_fn)(void *arg, model_session_t *s, const char *bytes, size_t n);

/* A new empty node started at start_us (its clock); NULL when out of memory. */
model_t *model_new(uint64_t start_us);
/* Frees m and every session still open on it. NULL-safe. */
void model_free(model_t *m);
/* Where PUBLISH delivers to subscribers. */
void model_set_push(model_t *m, model_push_fn fn, void *arg);
/* A crash and restart without persistence at now_us: every key and loaded
 * script is gone, uptime counts from now_us, sessions stay (the simulator
 * closes the connections). */
void model_restart(model_t *m, uint64_t now_us);
/* A restart with persistence at now_us: the keys stay, the loaded scripts
 * are gone, uptime counts from now_us. */
void model_reboot(model_t *m, uint64_t now_us);
/* Keys in m (expired ones not yet reclaimed included, as DBSIZE counts). */
size_t model_dbsize(const model_t *m);

/* A client connection's state on m (MULTI queue, subscriptions); owner is
 * the caller's. Freed with model_session_free (NULL-safe). */
model_session_t *model_session_new(model_t *m, void *owner);
void model_session_free(model_session_t *s);
void *model_session_owner(const model_session_t *s);

/* Executes cmd from session s at node time now_us and appends its reply
 * (several for a SUBSCRIBE of several channels) to out. */
void model_exec(model_t *m, model_session_t *s, const resp_cmd_t *cmd, uint64_t now_us, sbuf_t *out);

/* ---- replication (simrepl.c) ---- */

/* While on, m keeps what each command changes, for model_take_fx. */
void model_set_recording(model_t *m, int on);
/* What the last model_exec on m changed: each key as it now is (or gone),
 * with its absolute expiry, as Redis sends replicas a key's expiry
 * instant; NULL when nothing changed. A batch advances m's replication
 * offset, which the session that wrote remembers (WAIT). Freed with
 * model_fx_free. */
model_fx_t *model_take_fx(model_t *m);
/* A full resync: every key of m, the replica emptied first. */
model_fx_t *model_full_fx(model_t *m);
/* A replica m applies fx and takes its offset. */
void model_apply_fx(model_t *m, const model_fx_t *fx);
/* One more reference to fx; model_fx_free drops one (NULL-safe). */
model_fx_t *model_fx_ref(model_fx_t *fx);
void model_fx_free(model_fx_t *fx);
uint64_t model_fx_offset(const model_fx_t *fx);
size_t model_fx_keys(const model_fx_t *fx);
/* m's replication offset: the last batch it took or applied. */
uint64_t model_repl_offset(const model_t *m);
/* Who answers WAIT on m (NULL: 0 replicas, at once). */
void model_set_wait(model_t *m, model_wait_fn fn, void *arg);
/* The replication offset of session s's last write. */
uint64_t model_session_woff(const model_session_t *s);

/* ---- cluster mode (simcluster.c) ---- */

/* Where a keyed command goes in cluster mode: NULL to run it on this
 * node, else the error to answer (MOVED, ASK, TRYAGAIN). Its keys (or
 * shard channels) are in slot; present of the nkeys exist here; asking:
 * ASKING came before it. The string must last until the next call. */
typedef const char *(*model_route_fn)(void *arg, int slot, int nkeys, int present, int asking);
/* Appends the CLUSTER SLOTS reply to out. */
typedef void (*model_slots_fn)(void *arg, sbuf_t *out);

/* Puts m in cluster mode (route NULL: a plain master again): keyed
 * commands are routed, ASKING and CLUSTER SLOTS answer, keys of two slots
 * in one command are refused (CROSSSLOT). */
void model_set_cluster(model_t *m, model_route_fn route, model_slots_fn slots, void *arg);
/* The slot of key (n bytes): CRC16 mod 16384 of it, or of its {hash tag}. */
int model_key_slot(const char *key, size_t n);
/* MIGRATE of one live key of slot from `from` to `to` (each at its own
 * clock; the TTL goes as what is left of it): returns 1, or 0 when none
 * is left. Both record the change for their replicas. */
int model_migrate_one(model_t *from, model_t *to, int slot, uint64_t from_now_us, uint64_t to_now_us);
/* slot left m: its sessions' shard channels of that slot are unsubscribed
 * (a sunsubscribe push each), as Redis does. */
void model_slot_gone(model_t *m, int slot);

/* ---- between model.c and mlua.c ---- */

/* Runs one command for a script (redis.call / redis.pcall): its reply
 * appended to out; commands a script may not run are refused. */
void model_script_call(model_t *m, const resp_cmd_t *cmd, sbuf_t *out);
/* mlua.c: EVAL (sha NULL: body is cmd->argv[1]) or EVALSHA (sha given)
 * of cmd on m, the reply appended to out. */
void mlua_eval(model_t *m, const resp_cmd_t *cmd, int by_sha, sbuf_t *out);
/* mlua.c: SCRIPT LOAD of body (n bytes) on m: writes its sha1 (41 bytes
 * with the NUL) into sha and remembers it; returns 0, or -1 with the
 * compile error in err. */
int mlua_load(model_t *m, const char *body, size_t n, char sha[41], char *err, size_t errlen);
/* mlua.c: whether m knows sha (SCRIPT EXISTS); forgetting all (FLUSH). */
int mlua_known(const model_t *m, const char *sha);
void mlua_forget(model_t *m);
/* mlua.c: frees the compiled scripts shared by every model (at exit). */
void mlua_shutdown(void);

/* model.c: m's script cache (sha1 strings), for mlua.c. */
typedef struct model_scripts {
    char (*sha)[41];
    size_t n, cap;
} model_scripts_t;
model_scripts_t *model_scripts(model_t *m);

#endif
