/* sim.h -- redlock-sim, the deterministic simulator (test/sim/README.md).
 *
 * One thread, simulated time, one seeded PRNG per concern. The library's
 * own async handle (src/async, over the one core) is the driver under
 * test: the simulator is its event-loop adapter (the hooks of
 * redlock_async_set_hooks), and the link-time substitutions of simnet.c
 * give it simulated sockets, the client's drifting clock and the tokens
 * and random draws of the run's PRNG. Nodes are model.c's, one per node,
 * behind simulated links with per-node latency. The checkers (simcheck.c)
 * see every holder's validity window in simulated real time and a
 * protected store beside the lock.
 *
 * Modules: simcore.c (events, clocks, trace), simnet.c (links, nodes,
 * sockets and the --wrap functions), simclient.c (clients, actors and
 * their workload), simcheck.c (checkers), simfault.c (faults),
 * scenario.c (the scenarios), simmain.c (the command line). */
#ifndef SIM_SIM_H
#define SIM_SIM_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"
#include "redlock.h"
#include "rng.h"
#include "sbuf.h"

#define SIM_MAX_NODES 9 /* servers: 7 plain nodes, or 3 clusters of 3 shards */
#define SIM_MAX_CLIENTS 8
#define SIM_MAX_ACTORS 4 /* per client */
#define SIM_MAX_RES 4
#define SIM_MAX_REPLICAS 2     /* per node (replicated scenarios) */
#define SIM_FD_BASE 1000000    /* simulated sockets' fds: far above any real one */
#define SIM_MAX_EVENTS 2000000 /* a run with more is stopped as a runaway (a normal one has ~50000) */

/* ------------------------------------------------------------- clocks */

/* A clock that runs at (1 + rate) of real time and may be stepped:
 * local(t) = local0 + (t - real0) * (1 + rate), in µs. */
typedef struct sclock {
    uint64_t real0;
    double local0, rate;
} sclock_t;

double clock_local(const sclock_t *c, uint64_t t);
uint64_t clock_real(const sclock_t *c, double local); /* the first real µs at which local is reached */
void clock_step(sclock_t *c, uint64_t now, double by);
void clock_set_rate(sclock_t *c, uint64_t now, double rate);

/* -------------------------------------------------------------- faults */

enum {
    F_SPIKE = 1,    /* a node's latency rises for a while */
    F_RESET,        /* one connection is reset (what a lost message becomes on TCP) */
    F_PARTITION,    /* links between some clients and some nodes are cut */
    F_NODE_PAUSE,   /* a node stops (SIGSTOP) */
    F_CRASH,        /* a node crashes and restarts empty */
    F_STEP,         /* a node's wall clock steps */
    F_CLIENT_PAUSE, /* a client process stops */
    F_PUBSUB,       /* release announcements are lost for a while */
    F_RATE,         /* a node's clock changes its rate */
    F_FAILOVER,     /* a node's master dies and its most advanced replica is promoted */
    F_STALL,        /* a replica's stream stops for a while */
    F_KINDS
};
#define F_SAFE_KINDS F_FAILOVER /* safe's mix: the kinds before the replicas' */

/* ------------------------------------------------------------- events */

enum {
    E_SYN = 1,     /* a = conn: a connect reaches the node */
    E_SYNACK,      /* a = conn: the connect completed (at the client) */
    E_REFUSED,     /* a = conn: the node was down: refused (at the client) */
    E_CMD,         /* a = conn, p = resp_cmd_t: a command reaches the node */
    E_FIN,         /* a = conn: the client closed it (at the node) */
    E_DATA,        /* a = conn, p/n = bytes: reply bytes reach the client */
    E_RESET,       /* a = conn: the client learns the connection was reset */
    E_TIMER,       /* a = client, g = timer generation */
    E_ACTOR,       /* a = client, b = actor, g = actor generation: its next step */
    E_STORE,       /* a = client, b = actor, p = store op: reaches the store */
    E_STORE_REPLY, /* a = client, b = actor, p = store op: back at the client */
    E_FAULT,       /* a = fault kind, b = target, g = parameter: a fault starts */
    E_HEAL,        /* a = fault kind, b = target: a fault ends */
    E_STOP,        /* the workload stops */
    E_REPL,        /* a = node, b = replica, g = stream, p = model_fx_t: changes reach the replica */
    E_ACK,         /* a = node, b = replica, g = stream, n = offset: its ack reaches the master */
    E_WAIT_DUE,    /* a = conn, g = its WAIT's number: the WAIT's timeout */
    E_TOOL,        /* a = the membership tool's write, b = node (-1: the write starts), g = its number */
    E_REDEPLOY,    /* a = client, b = its new list (CONF_*), g = 1 for a straggler */
    E_MIGRATE,     /* a = cluster, b = 0: a slot migration starts, 1: its next step */
    E_LOOKUP,      /* a = look-up, b = node: a Sentinel look-up's answer reaches its client */
    E_FEED,        /* a = feed, b = node: a "+switch-master" announcement reaches its client */
    E_KINDS
};

typedef struct sev {
    uint64_t at, seq;
    int kind;
    int a, b;
    uint64_t g;
    void *p; /* owned by the event */
    size_t n;
} sev_t;

/* --------------------------------------------------------- the network */

enum { SC_CONNECTING = 1, SC_OPEN, SC_REFUSED, SC_RESET };

typedef struct sconn {
    int id, client, node;
    int member; /* the group member it dialled (Sentinel groups; else 0) */
    int state;
    int closed;          /* the client closed its fd */
    int broken;          /* reset or its node crashed: in-flight messages are lost */
    uint32_t epoch;      /* the node incarnation it reached */
    sbuf_t rx, tx;       /* arrived, not yet read / sent, not yet a whole command */
    int blocked;         /* a WAIT of it blocks at the node: later commands are held */
    uint64_t wait_no;    /* its WAITs that blocked, the last one's number */
    long long wait_need; /* the blocked WAIT's replicas ... */
    uint64_t wait_off;   /* ... and the offset they must have acked */
    resp_cmd_t **held;   /* commands held behind the blocked WAIT, in order */
    size_t nheld, capheld;
    uint64_t c2n, n2c;     /* the last arrival scheduled each way (links are FIFO) */
    model_session_t *sess; /* its state at the node, once connected */
} sconn_t;

/* A replica of a node's master: an asynchronous stream of the master's
 * changes reaches it after its own one-way latency (FIFO), and its acks
 * travel back alike; a stalled stream holds what is sent meanwhile. */
typedef struct srepl {
    model_t *m;
    double lat_us;
    uint64_t last_at;       /* the last arrival scheduled (FIFO) */
    uint64_t stalled_until; /* F_STALL */
    uint64_t acked;         /* its offset as the master last heard */
    int member;             /* the group member (address) it is (Sentinel groups) */
} srepl_t;

typedef struct snode {
    model_t *m; /* the master (a replica's model after a promotion) */
    srepl_t reps[SIM_MAX_REPLICAS];
    int n_reps;
    uint64_t stream;       /* bumped when the master changes: what the old one sent is lost */
    uint64_t promoted_at;  /* real µs of its last promotion, 0: none */
    int promotions;        /* so far: the sentinels' failover epoch */
    int master_member;     /* the member (address) that is its master (Sentinel groups) */
    uint64_t restarted_at; /* real µs of its last restart, 0: none */
    uint64_t imported_off; /* its master's offset after the last key migrated into it (cluster), 0: none */
    int up;
    uint32_t epoch;        /* bumped by each restart */
    sclock_t clock;        /* its wall clock (µs since the epoch): TTLs and TIME */
    double lat_us, jit_us; /* one-way latency: base + exponential jitter of this mean */
    uint64_t slow_until;   /* a latency spike: until then ... */
    double slow_us;        /* ... this much more each way */
    uint64_t paused_until; /* SIGSTOP: commands wait until then */
    double jumped_fwd_us;  /* forward steps so far (the safe scenario bounds them) */
} snode_t;

/* ------------------------------------------------------------- clients */

enum { RK_MUTEX = 1, RK_SEM, RK_RW };
enum { AK_MUTEX = 1, AK_PERMIT, AK_READER, AK_WRITER };

typedef struct sactor {
    int client, idx;
    uint64_t gen;  /* bumps cancel its scheduled step */
    int phase;     /* simclient.c's A_* */
    int res, kind; /* what it holds or asks for */
    redlock_lock_t *lock;
    int win;                /* its window in the checker, -1 when none open */
    uint64_t deadline_seen; /* the lock's deadline (client clock) last seen */
    uint64_t read_version;  /* the protected store's version its read saw */
    int extends_left;
    uint64_t hold_until; /* real µs: its hold ends */
    uint64_t call_at;    /* when its pending call started (client clock, µs) */
    int waiting_cancel;  /* an unbounded wait it will cancel */
} sactor_t;

enum { CONF_OLD = 0, CONF_JOINT, CONF_NEW }; /* the node lists a client's handle uses */

typedef struct sclient {
    int id;
    redlock_async_t *a;
    int conf;        /* CONF_* */
    int redeploying; /* its handle is being freed: callbacks are void */
    sclock_t clock;  /* its CLOCK_MONOTONIC */
    uint64_t paused_until;
    int rd[64], wr[64]; /* fds watched for reading / writing */
    int notified;       /* a real fd of its handle (the wake pipe) was written: look at them */
    int nrd, nwr;
    uint64_t timer_gen;
    int timer_armed;
    int fencing;
    sactor_t actors[SIM_MAX_ACTORS];
    int n_actors;
} sclient_t;

/* --------------------------------------------------------- the scenario */

enum { WAN_MUTEX = 0, WAN_FENCED, WAN_WAIT, WAN_PERMIT, WAN_READER, WAN_OPS };

enum {
    SCN_SAFE = 0,
    SCN_RESTART,
    SCN_DRIFT,
    SCN_PAUSE,
    SCN_WAN,
    SCN_PAUSE_FENCED,
    SCN_REPLICATED,
    SCN_LAGGING,
    SCN_MEMBERSHIP,
    SCN_MEM_NO_RECORD,
    SCN_MEM_NO_WAIT,
    SCN_CLUSTER,
    SCN_COUNT
};

/* How a run changes its node set (the membership scenarios). */
enum { MEM_NONE = 0, MEM_PROC, MEM_NO_RECORD, MEM_NO_WAIT };

typedef struct sres {
    char name[16];
    int kind;       /* RK_* */
    unsigned limit; /* RK_SEM */
} sres_t;

/* A run's configuration, drawn by its scenario from the seed. */
typedef struct scfg {
    int scenario;
    int n_nodes, n_clients, n_actors;
    sres_t res[SIM_MAX_RES];
    int n_res;
    uint32_t ttl_min, ttl_max; /* ms */
    double fencing_p;          /* a client has fencing */
    uint32_t max_ttl_ms;       /* 0: no quarantine */
    int quarantine;
    uint64_t run_us;       /* the workload's length */
    double fault_every_us; /* mean gap between faults (0: none) */
    int pause_check_write; /* pause-without-fencing: a pause between check and write */
    double wan_rtt_ms[SIM_MAX_NODES];
    int wan_op;                  /* wan: what is timed (WAN_*) */
    double think_us;             /* an actor's mean pause between operations */
    double long_hold_p;          /* a hold runs to 0.8-1.4 TTL (else 0.02-0.32) */
    uint64_t hold_us;            /* every hold this long (wan), 0: drawn */
    uint32_t margin_ms;          /* validity checked before the store write */
    int n_replicas;              /* each node's (0: plain masters) */
    uint32_t min_replicas;       /* the clients' option */
    double repl_lat_max_us;      /* a replica's one-way latency, drawn up to this */
    int membership;              /* MEM_* */
    unsigned old_mask, new_mask; /* OLD's and NEW's nodes (bits); without a change both are every node */
    double straggler_p;          /* a client is late to leave OLD */
    int keep_data;               /* a crashed node restarts with its keys (persistence) */
    uint64_t up_us;              /* how long the nodes (and replicas) have run at the start (0: they start with it) */
    int n_shards;                /* >0: each Redlock node is a Redis Cluster of this many shards (n_nodes servers) */
    int sentinel;                /* each node is a Sentinel group: members at their own addresses, the
                                  * clients' redis+sentinel:// URIs answered by simsentinel.c */
    double migrate_every_us;     /* a cluster's mean gap between slot migrations (0: none) */
} scfg_t;

/* ---------------------------------------------------------- the run */

typedef struct sstore {
    uint64_t version, seen; /* writes applied; the highest fence seen */
} sstore_t;

/* A protected store operation (an E_STORE's payload, and its reply's). */
typedef struct sop {
    int res, write, fenced;
    uint64_t fence, read_version;
    uint64_t version; /* reply: the store's version (read) */
    int applied;      /* reply: the write went in */
} sop_t;

typedef struct swin {
    int res, kind, client, actor;
    uint64_t start, end; /* real µs */
    uint64_t fence;
    int slot; /* a permit's slot, else -1 (fencing tokens rise per key) */
    long lock_id;
} swin_t;

/* What a run exercised (the summary's coverage line). */
enum {
    COV_MUTEX,
    COV_PERMIT,
    COV_READER,
    COV_WRITER,      /* locks granted, by kind */
    COV_FENCED,      /* granted with a fencing token */
    COV_REFUSED,     /* acquires that failed (taken, no quorum, expired...) */
    COV_WAITS,       /* acquires that waited on a release channel (library stats) */
    COV_WAKEUPS,     /* release announcements that woke a waiter */
    COV_CANCELS,     /* waits cancelled */
    COV_AUTOEXT,     /* locks auto-extended */
    COV_EXTENDS,     /* extensions that succeeded (by hand and automatic) */
    COV_LOST,        /* locks auto-extension gave up */
    COV_ABANDONED,   /* locks left to expire */
    COV_QUARANTINED, /* votes withheld by quarantine (restart, clock step) */
    COV_SUSPECTED,   /* nodes found silent */
    COV_RECONNECTS,
    COV_STORE_WRITES,      /* protected-store writes applied */
    COV_STALE_WRITES,      /* fenced store writes refused: their token was below one already seen */
    COV_STALE_READS,       /* fenced store reads refused, likewise */
    COV_REPL_BATCHES,      /* batches of changes sent to replicas */
    COV_WAITS_ANSWERED,    /* WAITs answered with enough replicas */
    COV_WAIT_SHORT,        /* WAITs that timed out short of their replicas */
    COV_PROMOTIONS,        /* replicas promoted */
    COV_PROMOTED_BEHIND,   /* promoted replicas that lacked changes their master had */
    COV_STEPS,             /* membership writes that every node took */
    COV_REDEPLOYS,         /* clients redeployed with other node lists */
    COV_REFUSED_BY_RECORD, /* acquires refused by membership records (REDLOCK_ERR_MEMBERSHIP) */
    COV_MOVED,             /* MOVED answers (cluster) */
    COV_ASK,               /* ASK answers: a migrating slot's key had gone */
    COV_TRYAGAIN,          /* TRYAGAIN answers: a command's keys split by a migration */
    COV_KEYS_MIGRATED,     /* keys MIGRATE moved */
    COV_SLOTS_MIGRATED,    /* slot migrations finished */
    COV_LOOKUPS,           /* Sentinel look-ups answered */
    COV_SWITCHES,          /* failovers announced to a client's feed */
    COV_REPLICA_REFUSED,   /* commands a demoted master or a replica refused (READONLY, ROLE slave) */
    COV_N
};

/* What a violation is (simcheck.c): the kinds --expect names. */
enum {
    V_TWO_HOLDERS = 0, /* windows that must not overlap did: two mutex holders, a writer beside
                        * anyone, more permit holders than permits */
    V_LOST_UPDATE,     /* a protected-store write over a version its writer never read */
    V_TOKEN_ORDER,     /* a mutex's fencing token not above an earlier holder's */
    V_RUNAWAY,         /* the run spun past SIM_MAX_EVENTS: never what a scenario expects */
    V_KINDS
};

typedef struct strec {
    uint64_t t;
    int kind, a, b;
    long long x, y;
} strec_t;

#define SIM_TRACE_RING 256
#define SIM_TRACE_SHORT 40 /* records printed before a seed's first violation */

typedef struct sim {
    uint64_t seed;
    scfg_t cfg;
    uint64_t now, seq, events;
    sev_t *heap;
    size_t nheap, capheap;
    rng_t r_net, r_fault, r_work, r_core, r_cfg; /* one stream per concern */
    snode_t nodes[SIM_MAX_NODES];
    sclient_t clients[SIM_MAX_CLIENTS];
    sconn_t **conns;
    size_t nconns, capconns;
    uint64_t cut[SIM_MAX_CLIENTS][SIM_MAX_NODES]; /* partitioned until (real µs) */
    uint64_t pubsub_loss_until;
    sstore_t stores[SIM_MAX_RES];
    swin_t *wins;
    size_t nwins, capwins;
    long next_lock_id;
    sclient_t *cur; /* the client whose code runs (its clock is rl_clock's) */
    int stopping;   /* the workload is over: callbacks only count */
    /* results */
    uint64_t ops, faults, violations;
    uint64_t lost_updates;
    uint64_t vkind[V_KINDS]; /* violations by kind */
    uint64_t fkind[F_KINDS]; /* faults injected by kind */
    uint64_t cov[COV_N];
    char first_violation[256];
    uint64_t violation_at; /* real µs of the first violation (a two-holders': the later window's start) */
    uint64_t focus_to;     /* a replay for the trace before a violation: records after this, and the
                            * timers and replication's, stay out of the ring (0: all go in) */
    uint64_t hash;         /* of the run's trace */
    int trace;             /* print every trace record */
    strec_t ring[SIM_TRACE_RING];
    size_t nring;
    /* wan: acquire latencies (µs, client clock) */
    double *lat;
    size_t nlat, caplat;
} sim_t;

extern sim_t *S; /* the run being simulated */

/* What the runs of one command line found, added up run by run. */
typedef struct totals {
    uint64_t runs, ops, faults, violations, violating_runs, lost_updates;
    uint64_t vkind[V_KINDS], fkind[F_KINDS], cov[COV_N];
    long long first_seed; /* the first seed with a violation, or -1 */
    uint64_t hash;
    double *lat;
    size_t nlat;
} totals_t;

/* Trace records beyond the events (whose kinds are E_*). */
enum {
    T_ACQUIRED = E_KINDS, /* a = client, b = actor, x = rc, y = fence or validity */
    T_EXTENDED,           /* x = rc */
    T_RELEASED,           /* x = rc */
    T_ABANDONED,
    T_STORE_WRITE, /* x = 1 applied, 0 refused as stale; y = lost updates */
    T_VIOLATION,   /* a = resource, x, y = what (see simcheck.c) */
    T_FAULTED,     /* a = fault kind, b = target, x, y = parameters */
    T_LOST,        /* a lock's auto-extension gave up: a = client, b = actor, x = reason */
    T_STEP,        /* a membership write every node took: a = which (simmember.c) */
    T_REDEPLOYED,  /* a = client, b = its new lists (CONF_*) */
    T_MIGRATING,   /* a = cluster, b = slot, x = from shard, y = to shard: a migration starts */
    T_MIGRATED,    /* the same: it ended, the map changed */
    T_KINDS
};

/* simcore.c: events, the run loop, the trace. */
void sim_push(int kind, uint64_t at, int a, int b, uint64_t g, void *p, size_t n);
void sim_loop(uint64_t until); /* processes events up to until (real µs) */
void sim_drop_events(void);    /* frees what is left */
void trace_rec(int kind, int a, int b, long long x, long long y);
void trace_print(FILE *f, const strec_t *r);
void trace_tail(FILE *f, size_t n); /* the run's last n records (at most SIM_TRACE_RING) */
const char *fault_name(int kind);   /* F_*'s name */

/* simnet.c: links, nodes, the simulated sockets. */
void net_init(void);
void net_free(void);
void net_event(sev_t *e); /* may take e->p (then sets it NULL) */
int net_socket(void);     /* the --wrap functions' (simwrap.c) */
int net_connect(int fd, int node, int member);
long net_send(int fd, const char *p, size_t n);
long net_recv(int fd, char *p, size_t n);
void net_close(int fd);
uint64_t net_one_way(int node); /* a one-way latency draw, µs */
sconn_t *net_conn(int fd);      /* NULL for a fd that is not simulated */
int net_readable(const sconn_t *c);
int net_writable(const sconn_t *c);
void net_reset(sconn_t *c); /* a connection reset (both ends) */
void net_crash(int node);
void net_restart(int node);            /* (with its keys when the scenario keeps data) */
void net_revive(int node);             /* node is up again as a new incarnation, keeping its keys (a promotion) */
int net_open_conns(int *ids, int max); /* established, unbroken connections' ids */
double node_now_us(int node);          /* the node's clock now */

/* simrepl.c: replicas, WAIT, promotion. */
void repl_init(void);
void repl_free(void);
void repl_event(sev_t *e);
void repl_ship(int node);   /* after a command on node's master: its changes go out */
void repl_resync(int node); /* node's master restarted empty: replicas resync */
void repl_stall(int node, uint64_t until);
void repl_promote(int node);                               /* its most advanced replica becomes the master */
void net_unblock(sconn_t *c, const char *reply, size_t n); /* simnet.c: a blocked WAIT answers */

/* simmember.c: the membership procedure; its tool's writes, in order. */
enum { W_BEGUN = 1, W_JOINT, W_ADVANCED, W_FINISHED };
void member_init(void);
void member_event(sev_t *e);

/* simcluster.c: Redis Cluster nodes (the cluster scenario). */
void cluster_init(void);
void cluster_free(void);
void cluster_event(sev_t *e);
void cluster_attach(int srv);   /* srv's (new) primary model serves in cluster mode */
const char *cluster_uri(int c); /* Redlock node c: "redis+cluster://10.0.0.(c*K+1):6379?seed=..." */

/* simsentinel.c: Sentinel groups (sentinel scenarios): the library's look-ups
 * and failover feeds answered from the groups' state, members' addresses. */
void sentinel_event(sev_t *e);
void sentinel_announce(int node); /* node's group failed over: its feeds hear of it */
void sentinel_free(void);
int sentinel_at_master(const sconn_t *c); /* c reaches its node's master (always, outside Sentinel groups) */
void sentinel_replica_reply(sconn_t *c, const resp_cmd_t *cmd, sbuf_t *out); /* a replica's answer */
const char *sentinel_uri(int node);                                          /* "redis+sentinel://10.9.0.1:26379/gN" */

/* simclient.c: the clients, their handles and actors. */
void clients_init(void);
void clients_stop(void); /* the workload ends: release what is held */
void clients_free(void);
void client_event(sev_t *e);
void client_pump(sclient_t *c);               /* lets c's handle act on what is ready */
uint64_t client_now(const sclient_t *c);      /* its clock, µs */
const char *sim_node_uri(int node);           /* "redis://10.0.0.(node+1):6379" */
void client_redeploy(sclient_t *c, int conf); /* its handle freed and made again with conf's lists */

/* simcheck.c: windows, the protected store, violations. */
/* A holder's window opens now until deadline_real; prev >= 0: it goes on
 * the lock of window prev (after an extension landed past its deadline).
 * lock gives its fencing token and permit slot. Returns the window. */
int check_open(int res, int kind, int client, int actor, uint64_t deadline_real, const redlock_lock_t *lock, int prev);
void check_extend(int win, uint64_t deadline_real); /* a new deadline (not earlier) */
void check_close(int win, uint64_t at);             /* released or lost at `at` (its deadline still bounds it) */
void check_windows(void);                           /* at the end of the run */
void store_event(sev_t *e);
/* Counts a violation of kind (V_*) on resource res (-1: none), traces it
 * with x and y, and keeps the words of the run's first. */
void violation(int kind, int res, long long x, long long y, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* simfault.c: the faults of the scenario. */
void faults_init(void);
void fault_event(sev_t *e);
void fault_pause_client(int c, uint64_t us); /* also the workload's, in pause-without-fencing */
void fault_count(int kind);                  /* a fault of kind F_* was injected */

/* simverdict.c: what the seeds must show (--expect, --floors). */
const char *violation_name(int kind); /* V_*'s name */
int expect_by_name(const char *name); /* a V_* but V_RUNAWAY, V_KINDS for none, or -1 */
const char *expect_name(int expect);
void verdict_coverage(FILE *out, const totals_t *t);
int verdict_floors(const totals_t *t, int scn, int verbose); /* floors missed (said on stderr) */
int verdict_settled(const totals_t *t, int expect);          /* --first may stop */
int verdict_expect(const totals_t *t, int scn, int expect);  /* 0 met, 1 not (said on stderr) */
void verdict_json(FILE *out, const totals_t *t, int scn, int expect);

/* scenario.c */
int scenario_by_name(const char *name); /* SCN_*, or -1 */
const char *scenario_name(int scn);
int scenario_expect(int scn); /* the violation it exists to show (V_*), V_KINDS: none */
void scenario_config(int scn, rng_t *r, scfg_t *cfg);
void scenario_sentinel(scfg_t *cfg, int on); /* Sentinel groups or not (where there are replicas) */
void scenario_setup(rng_t *r);               /* the run's nodes' and clients' clocks and latencies */

#endif
