#!/usr/bin/env node
// bench.js -- node-redlock (npm redlock@5.0.0-beta.2 over ioredis 5) under
// the same workloads as bench_redlock, printing the same RESULT lines.
//
//   node bench.js -u URI,URI,... -w serial|concurrent [-t CALLERS] [-d SECONDS]
//                 [-n CYCLES] [--warmup CYCLES] [--ttl MS]
//   node bench.js --version      versions of redlock and ioredis
//
// serial:     one caller, acquire + release on distinct keys: latency of the
//             acquire and of the whole cycle (p50/p99/p999), cycles/s, CPU µs
//             per cycle (process.cpuUsage: user + system of the process).
// concurrent: CALLERS async callers in one process, each cycling on its own
//             distinct keys, for SECONDS: cycles/s and cycle latency.
// retryCount is 0: distinct keys are never taken, so one attempt suffices.
// One ioredis client per node, with ioredis's defaults (no auto-pipelining),
// as a node-redlock user would set it up.
"use strict";

const path = require("path");

function parseArgs(argv) {
  const a = { workload: "serial", callers: 1, secs: 2, cycles: 0, warmup: 200, ttl: 10000, uris: null };
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[i + 1];
    const num = () => {
      const x = Number(v);
      if (!Number.isFinite(x) || x < 0) {
        console.error(`bad value for ${k}: '${v}'`);
        process.exit(2);
      }
      i++;
      return x;
    };
    if (k === "--version") a.version = true;
    else if (k === "-u") { a.uris = v; i++; }
    else if (k === "-w") { a.workload = v; i++; }
    else if (k === "-t") a.callers = num();
    else if (k === "-d") a.secs = num();
    else if (k === "-n") a.cycles = num();
    else if (k === "--warmup") a.warmup = num();
    else if (k === "--ttl") a.ttl = num();
    else {
      console.error("usage: node bench.js -u URI,URI,... -w serial|concurrent [-t CALLERS] [-d SECONDS] [-n CYCLES] [--warmup CYCLES] [--ttl MS]");
      process.exit(2);
    }
  }
  return a;
}

function versionOf(pkg) {
  try {
    return require(path.join(__dirname, "node_modules", pkg, "package.json")).version.replace(/^v/, "");
  } catch (e) {
    return "n/a";
  }
}

// Nearest-rank quantile of a sorted array of nanoseconds, in µs.
function quantileUs(sorted, q) {
  if (!sorted.length) return 0;
  let rank = Math.ceil(q * sorted.length);
  rank = Math.min(Math.max(rank, 1), sorted.length);
  return Number(sorted[rank - 1]) / 1000;
}

function kvQuantiles(prefix, samples) {
  const s = BigUint64Array.from(samples).sort();
  return [
    `${prefix}_p50_us=${quantileUs(s, 0.5).toFixed(3)}`,
    `${prefix}_p99_us=${quantileUs(s, 0.99).toFixed(3)}`,
    `${prefix}_p999_us=${quantileUs(s, 0.999).toFixed(3)}`,
  ].join(" ");
}

function cpuUs() {
  const u = process.cpuUsage();
  return u.user + u.system;
}

function makeClient(Redis, uri) {
  const m = /^redis:\/\/([^:/@]+)(?::(\d+))?/.exec(uri);
  if (m) return new Redis({ host: m[1], port: m[2] ? Number(m[2]) : 6379 });
  const u = /^unix:\/\/(.+)$/.exec(uri);
  if (u) return new Redis({ path: u[1] });
  throw new Error(`unsupported URI '${uri}'`);
}

async function main() {
  const args = parseArgs(process.argv);
  if (args.version) {
    console.log(`redlock=${versionOf("redlock")} ioredis=${versionOf("ioredis")}`);
    return 0;
  }
  if (!args.uris) {
    console.error("bench.js: -u URI,URI,... is required");
    return 2;
  }
  const Redis = require("ioredis");
  const Redlock = require("redlock").default;
  const uris = args.uris.split(",").filter(Boolean);
  const clients = uris.map((u) => makeClient(Redis, u));
  await Promise.all(clients.map((c) => c.ping()));
  const redlock = new Redlock(clients, { driftFactor: 0.01, retryCount: 0, retryDelay: 200, retryJitter: 100 });
  redlock.on("error", () => {}); // failed votes are counted below, not logged
  const prefix = `bench:node:${process.pid}`;
  const ttl = args.ttl;
  let errors = 0;

  // One acquire + release; returns the hrtime at which the acquire resolved.
  async function cycle(key) {
    let lock;
    try {
      lock = await redlock.acquire([key], ttl);
    } catch (e) {
      errors++;
      return process.hrtime.bigint();
    }
    const t = process.hrtime.bigint();
    try {
      await lock.release();
    } catch (e) {
      errors++;
    }
    return t;
  }

  for (let i = 0; i < args.warmup; i++) await cycle(`${prefix}:warm:${i}`);
  errors = 0;

  const line = [`RESULT impl=node-redlock workload=${args.workload} nodes=${uris.length}`];
  if (args.workload === "serial") {
    const acq = [];
    const cyc = [];
    const t0run = process.hrtime.bigint();
    const deadline = t0run + BigInt(Math.round(args.secs * 1e9));
    const cpu0 = cpuUs();
    let n = 0;
    for (;; n++) {
      if (args.cycles > 0 && n >= args.cycles) break;
      const t0 = process.hrtime.bigint();
      if (t0 >= deadline) break;
      const t1 = await cycle(`${prefix}:${n}`);
      const t2 = process.hrtime.bigint();
      acq.push(t1 - t0);
      cyc.push(t2 - t0);
    }
    const cpu = cpuUs() - cpu0;
    const secs = Number(process.hrtime.bigint() - t0run) / 1e9;
    line.push(`threads=1 cycles=${n} secs=${secs.toFixed(3)} cps=${(n / secs).toFixed(3)}`);
    line.push(kvQuantiles("acq", acq), kvQuantiles("cyc", cyc));
    line.push(`cpu_us_per_cycle=${(cpu / Math.max(n, 1)).toFixed(3)} errors=${errors}`);
  } else if (args.workload === "concurrent") {
    const callers = Math.max(1, Math.floor(args.callers));
    const lat = [];
    let total = 0;
    let stop = false;
    const t0run = process.hrtime.bigint();
    const cpu0 = cpuUs();
    const timer = setTimeout(() => { stop = true; }, Math.round(args.secs * 1000));
    const worker = async (id) => {
      for (let n = 0; !stop; n++) {
        const t0 = process.hrtime.bigint();
        await cycle(`${prefix}:c${id}:${n}`);
        lat.push(process.hrtime.bigint() - t0);
        total++;
      }
    };
    await Promise.all(Array.from({ length: callers }, (_, id) => worker(id)));
    clearTimeout(timer);
    const cpu = cpuUs() - cpu0;
    const secs = Number(process.hrtime.bigint() - t0run) / 1e9;
    line.push(`threads=${callers} cycles=${total} secs=${secs.toFixed(3)} cps=${(total / secs).toFixed(3)}`);
    line.push(kvQuantiles("cyc", lat));
    line.push(`cpu_us_per_cycle=${(cpu / Math.max(total, 1)).toFixed(3)} errors=${errors}`);
  } else {
    console.error(`bench.js: unknown workload '${args.workload}'`);
    return 2;
  }
  console.log(line.join(" "));
  await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
  return 0;
}

main().then(
  (rc) => process.exit(rc),
  (e) => {
    console.error(`bench.js: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  }
);
