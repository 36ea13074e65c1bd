#!/usr/bin/env node
// bench_handoff.js -- node-redlock's side of bench/bench_handoff.c's
// "contend" workload (issue 14, item 7), with node-redlock's DEFAULT
// settings (new Redlock(clients): retryCount 10, retryDelay 200 ms,
// retryJitter 100 ms, driftFactor 0.01).
//
//   node bench_handoff.js -u URI,URI,... [-t WORKERS] [-d SECONDS]
//        [--hold-ms MS] [--work-ms MS] [--ttl MS] [--samples FILE] [--impl NAME]
//        [--timeline FILE] [--grace-ms MS]
//   node bench_handoff.js --version
//
// WORKERS (default 8) concurrent async tasks in ONE process, sharing one
// Redlock over one ioredis client per node -- the way a node service waits
// for a lock, and the counterpart of bench_handoff's threads sharing one
// redlock_t. (Worker threads would each need a Redlock and connections of
// their own: that is the one-handle-per-thread variant, which says nothing
// more about the polling being measured.) The waiting is timers and socket
// reads, so one event loop does not hold the workers back: each task spends
// its time in acquire's retry delay, the hold or the work, all sleeps.
//
// Each task loops: acquire (an ExecutionError after the retries is a
// refusal: it calls acquire again at once, still waiting), hold --hold-ms,
// release, work --work-ms. Handoff, busy and fairness are defined as in
// bench_handoff.c: the release time is read just before lock.release() is
// called, and the next grant takes it when a task was waiting at that
// moment. Prints the same table and RESULT line.
//
// --timeline FILE: one line per grant, in time order: its wall-clock time
// (seconds since the epoch) and its handoff in µs ("-" when none), as
// bench_handoff.c's; the RESULT line has start_epoch and end_epoch.
// --grace-ms MS (default 3000): the run reports --grace-ms after its end
// even if some task is still inside acquire or release (ioredis has no
// command timeout by default, so a call to a paused node may never end);
// such tasks are counted as stuck_tasks.
"use strict";

const fs = require("fs");
const path = require("path");

const NUMERIC = {
  "-t": "workers", "-d": "secs", "--hold-ms": "holdMs", "--work-ms": "workMs", "--ttl": "ttl", "--grace-ms": "graceMs",
};
const TEXT = { "-u": "uris", "--samples": "samples", "--impl": "impl", "--timeline": "timeline" };

function usage() {
  console.error("usage: node bench_handoff.js -u URI,URI,... [-t WORKERS] [-d SECONDS] [--hold-ms MS] " +
    "[--work-ms MS] [--ttl MS] [--samples FILE] [--impl NAME] [--timeline FILE] [--grace-ms MS] | --version");
  process.exit(2);
}

function options(argv) {
  const o = {
    workers: 8, secs: 6, holdMs: 5, workMs: 5, ttl: 10000, graceMs: 3000, uris: "", samples: "", timeline: "",
    impl: "node-redlock",
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === "--version") return { version: true };
    const value = argv[++i];
    if (value === undefined) usage();
    if (flag in TEXT) {
      o[TEXT[flag]] = value;
    } else if (flag in NUMERIC) {
      const x = Number(value);
      if (!Number.isFinite(x) || x < 0) {
        console.error(`bad value for ${flag}: '${value}'`);
        process.exit(2);
      }
      o[NUMERIC[flag]] = x;
    } else {
      usage();
    }
  }
  if (!o.uris) usage();
  return o;
}

const moduleVersion = (name) => {
  try {
    const file = path.join(__dirname, "node_modules", name, "package.json");
    return JSON.parse(fs.readFileSync(file, "utf8")).version.replace(/^v/, "");
  } catch (e) {
    return "n/a";
  }
};

// ioredis options for redis://host:port or unix:///path.
function endpoint(uri) {
  if (uri.startsWith("unix://")) return { path: uri.slice("unix://".length) };
  const u = new URL(uri);
  if (u.protocol !== "redis:" || u.username || u.password) throw new Error(`unsupported node '${uri}'`);
  return { host: u.hostname, port: u.port ? Number(u.port) : 6379 };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const nowNs = () => process.hrtime.bigint();
// The wall clock in seconds since the epoch, to the µs.
const epochS = () => (performance.timeOrigin + performance.now()) / 1000;

// Nearest rank (1-based), as bench/common.c's bench_quantile_us.
function nearestRank(sortedUs, q) {
  if (sortedUs.length === 0) return 0;
  const rank = Math.min(sortedUs.length, Math.max(1, Math.ceil(q * sortedUs.length - 1e-9)));
  return sortedUs[rank - 1];
}

async function run(o) {
  const Redis = require("ioredis");
  const { default: Redlock, ExecutionError } = require("redlock");
  const clients = o.uris.split(",").filter((u) => u).map((u) => new Redis(endpoint(u)));
  await Promise.all(clients.map((c) => c.ping()));
  const redlock = new Redlock(clients); // the defaults, nothing set
  redlock.on("error", () => {}); // refused votes are expected here; errors are counted below
  const key = `bench:handoff:node:${process.pid}`;
  const warm = await redlock.acquire([`${key}:warm`], 1000); // loads the scripts before the clock starts
  await warm.release();

  const n = Math.max(1, Math.floor(o.workers));
  const hold = o.holdMs;
  const work = o.workMs;
  let waiting = 0; // tasks inside acquire
  let holders = 0;
  let violations = 0;
  let lastRelease = null; // { t, waited, by } of the release not yet followed by a grant
  const handoffUs = [];
  const timeline = []; // [epoch seconds, handoff µs or null] per grant
  const perTask = Array.from({ length: n }, () => ({ grants: 0, heldNs: 0n, taken: 0, errors: 0, releaseErrors: 0, regrants: 0 }));
  let stop = false;
  const t0 = nowNs();
  const t0Epoch = epochS();
  const deadline = t0 + BigInt(Math.round(o.secs * 1e9));

  async function task(me) {
    while (!stop) {
      waiting++;
      let lock = null;
      while (lock === null && !stop) {
        try {
          lock = await redlock.acquire([key], o.ttl);
        } catch (e) {
          if (e instanceof ExecutionError) {
            me.taken++;
          } else {
            if (++me.errors <= 3) console.error(`bench_handoff.js: acquire: ${e && e.message}`);
            await sleep(1);
          }
        }
      }
      const granted = nowNs();
      const grantedEpoch = epochS();
      waiting--;
      if (lock === null) break;
      if (holders++ !== 0) violations++;
      const rel = lastRelease;
      lastRelease = null;
      if (granted >= deadline) { // after the run: not counted
        holders--;
        await lock.release().catch(() => {});
        break;
      }
      let handoff = null;
      if (rel && rel.waited && granted > rel.t) {
        handoff = Number(granted - rel.t) / 1000;
        handoffUs.push(handoff);
        if (rel.by === me) me.regrants++;
      }
      if (o.timeline) timeline.push([grantedEpoch, handoff]);
      me.grants++;
      await sleep(hold);
      const t = nowNs();
      me.heldNs += (t < deadline ? t : deadline) - granted;
      holders--;
      lastRelease = { t, waited: waiting > 0, by: me };
      try {
        await lock.release();
      } catch (e) {
        me.releaseErrors++;
      }
      await sleep(work);
    }
  }

  const timer = setTimeout(() => { stop = true; }, Math.round(o.secs * 1000));
  let done = 0;
  const tasks = perTask.map((me) => task(me).then(() => { done++; }));
  await Promise.race([Promise.all(tasks), sleep(o.secs * 1000 + o.graceMs)]);
  clearTimeout(timer);
  const stuck = n - done; // still inside a call that did not end
  if (stuck) console.error(`bench_handoff.js: ${stuck} task(s) still inside a call ${o.graceMs} ms after the run`);
  // quit waits for the replies of queued commands: a paused node gives none
  await Promise.race([Promise.all(clients.map((c) => c.quit().catch(() => {}))), sleep(500)]);
  clients.forEach((c) => c.disconnect());

  const runS = Number(deadline - t0) / 1e9;
  const sum = (f) => perTask.reduce((s, w) => s + f(w), 0);
  const grants = sum((w) => w.grants);
  const heldS = sum((w) => Number(w.heldNs)) / 1e9;
  const gmin = Math.min(...perTask.map((w) => w.grants));
  const gmax = Math.max(...perTask.map((w) => w.grants));
  const mean = grants / n;
  const busy = (100 * grants * hold) / 1000 / runS;
  const held = (100 * heldS) / runS;
  const fair = mean > 0 ? gmin / mean : 0;
  handoffUs.sort((a, b) => a - b);
  const q = [0.5, 0.9, 0.99, 1].map((x) => nearestRank(handoffUs, x));
  const s = redlock.settings;
  const f3 = (x) => x.toFixed(3);

  const kv = [
    ["nodes", clients.length], ["threads", n], ["handles", 1], ["secs", f3(runS)], ["hold_ms", f3(hold)],
    ["work_ms", f3(work)], ["handoffs", handoffUs.length], ["handoff_p50_us", f3(q[0])], ["handoff_p90_us", f3(q[1])],
    ["handoff_p99_us", f3(q[2])], ["handoff_max_us", f3(q[3])], ["busy_pct", f3(busy)], ["held_pct", f3(held)],
    ["grants", grants], ["grants_min", gmin], ["grants_mean", f3(mean)], ["grants_max", gmax],
    ["min_over_mean", f3(fair)],
    ["back_to_releaser_pct", f3(handoffUs.length ? (100 * sum((w) => w.regrants)) / handoffUs.length : 0)], ["grants_per_thread", perTask.map((w) => w.grants).join("/")],
    ["retry_delay_ms", s.retryDelay], ["retry_jitter_ms", s.retryJitter], ["retry_count", s.retryCount],
    ["taken_recalls", sum((w) => w.taken)], ["violations", violations], ["errors", sum((w) => w.errors)],
    ["release_errors", sum((w) => w.releaseErrors)], ["stuck_tasks", stuck],
    ["start_epoch", t0Epoch.toFixed(3)], ["end_epoch", (t0Epoch + runS).toFixed(3)],
  ];
  console.log(`RESULT impl=${o.impl} workload=contend ` + kv.map(([k, v]) => `${k}=${v}`).join(" "));
  console.log(`${o.impl}: ${n} async tasks on one resource, 1 Redlock, ${clients.length} nodes, default settings ` +
    `(retryDelay ${s.retryDelay} ms +- ${s.retryJitter}, retryCount ${s.retryCount}), hold ${hold} ms, ` +
    `work ${work} ms, ${runS.toFixed(1)} s`);
  const pad = (v, w) => String(v).padStart(w);
  console.log("  " + [pad("handoffs", 8), pad("p50 us", 10), pad("p90 us", 10), pad("p99 us", 10), pad("max us", 10),
    pad("busy %", 7), pad("held %", 7), pad("grants", 7), pad("min thread/mean", 15)].join(" "));
  console.log("  " + [pad(handoffUs.length, 8), ...q.map((x) => pad(x.toFixed(1), 10)), pad(busy.toFixed(1), 7),
    pad(held.toFixed(1), 7), pad(grants, 7), pad(fair.toFixed(2), 15)].join(" "));
  if (o.timeline) {
    timeline.sort((a, b) => a[0] - b[0]);
    fs.writeFileSync(o.timeline, timeline.map(([t, h]) => `${t.toFixed(6)} ${h === null ? "-" : h.toFixed(3)}\n`).join(""));
  }
  if (o.samples) fs.writeFileSync(o.samples, handoffUs.map((x) => x.toFixed(3)).join("\n") + "\n");
  if (violations) console.error(`bench_handoff.js: ${violations} overlapping grants!`);
  return grants > 0 && violations === 0 ? 0 : 1;
}

const o = options(process.argv.slice(2));
if (o.version) {
  console.log(`redlock=${moduleVersion("redlock")} ioredis=${moduleVersion("ioredis")}`);
  process.exit(0);
}
run(o).then(
  (rc) => process.exit(rc),
  (e) => {
    console.error(`bench_handoff.js: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  }
);
