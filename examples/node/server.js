#!/usr/bin/env node
// A Node.js server that speaks bystander's endpoint protocol (docs/protocol.md):
// one event loop, as every Node.js process has. /slow blocks that loop
// (Atomics.wait holds the thread, as a synchronous driver call or
// fs.readFileSync does); /async waits on a timer; /offload runs the same
// blocking call on a pool of worker threads and answers from the loop.
//
//   node examples/node/server.js --addr 127.0.0.1:8090 [--block 5ms] [--delay 5ms] [--offload-workers 32]
//
// It prints "listening on http://ADDR" when it accepts connections, and ends
// on SIGINT or SIGTERM. Only Node's standard library is used.
'use strict';

const http = require('node:http');
const { Worker } = require('node:worker_threads');

const usage = `Usage: node examples/node/server.js [--addr HOST:PORT] [--block D] [--delay D] [--offload-workers N] [--ready-file F]

  --addr             where to listen (default 127.0.0.1:8090; port 0 picks a free one)
  --ready-file       once it listens, write where and its PID to this file as JSON (the kit's ready file)
  --block            the blocking call of /slow and /offload (default 5ms)
  --delay            the /async delay (default 5ms)
  --offload-workers  worker threads /offload blocks on (default 32)
Durations are Go durations: 5ms, 250us, 1.5s.`;

// A Go duration (docs/protocol.md): a decimal with a unit, or sequences of
// them ("1h30m"); "0" alone. Returns nanoseconds as a Number, or null.
const units = { ns: 1, us: 1e3, 'µs': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };
function parseDuration(s) {
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;
  let total = 0, i = 0;
  if (!s) return null;
  while (i < s.length) {
    re.lastIndex = i;
    const m = re.exec(s);
    if (!m) return null;
    total += parseFloat(m[1]) * units[m[2]];
    i = re.lastIndex;
  }
  return total;
}

const maxNs = 10e9;
const opts = { addr: '127.0.0.1:8090', block: 5e6, delay: 5e6, workers: 32, readyFile: '' };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  let [name, value] = argv[i].split(/=(.*)/s);
  if (name === '--help' || name === '-h') { console.log(usage); process.exit(0); }
  if (value === undefined) value = argv[++i];
  const bad = (why) => { console.error(`server.js: ${name} ${value}: ${why} (see --help)`); process.exit(2); };
  switch (name) {
    case '--addr': opts.addr = value; break;
    case '--ready-file': if (!value) bad('want a file name'); opts.readyFile = value; break;
    case '--block': case '--delay': {
      const d = parseDuration(value);
      if (d === null || d > maxNs) bad('want a Go duration from 0 to 10s');
      opts[name.slice(2)] = d;
      break;
    }
    case '--offload-workers': {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1 || n > 1024) bad('want 1 to 1024');
      opts.workers = n;
      break;
    }
    default: console.error(`server.js: unknown flag ${name} (see --help)`); process.exit(2);
  }
}
const colon = opts.addr.lastIndexOf(':');
const host = opts.addr.slice(0, colon).replace(/^\[|\]$/g, ''), port = Number(opts.addr.slice(colon + 1));
if (colon < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`server.js: --addr ${opts.addr}: want HOST:PORT`);
  process.exit(2);
}

// Wall-clock nanoseconds with sub-millisecond resolution: the protocol's
// timestamps are compared with the client's clock on the same machine.
const nowNs = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));

// The blocking call: the thread waits in the kernel (a futex), as a JDBC
// read or Thread.sleep holds a thread. Returns how long it took, in ns.
const sab = new Int32Array(new SharedArrayBuffer(4));
function block(ns) {
  const t0 = process.hrtime.bigint();
  if (ns > 0) Atomics.wait(sab, 0, 0, ns / 1e6);
  return process.hrtime.bigint() - t0;
}

// The offload pool: worker threads that each make the blocking call; the
// answer is written back on the loop, which owns the connection.
const workerSource = `
const { parentPort } = require('node:worker_threads');
const sab = new Int32Array(new SharedArrayBuffer(4));
parentPort.on('message', ({ id, ns }) => {
  const t0 = process.hrtime.bigint();
  if (ns > 0) Atomics.wait(sab, 0, 0, ns / 1e6);
  parentPort.postMessage({ id, blocked: Number(process.hrtime.bigint() - t0) });
});`;
const idle = [], queue = [], pending = new Map();
let nextId = 0;
for (let i = 0; i < opts.workers; i++) {
  const w = new Worker(workerSource, { eval: true });
  w.unref();
  w.on('message', ({ id, blocked }) => {
    const done = pending.get(id);
    pending.delete(id);
    done(blocked);
    const next = queue.shift();
    if (next) { pending.set(next.id, next.done); w.postMessage({ id: next.id, ns: next.ns }); } else idle.push(w);
  });
  w.on('error', (err) => { console.error('server.js: offload worker:', err); process.exit(1); });
  idle.push(w);
}
function offload(ns, done) {
  const id = nextId++;
  const w = idle.pop();
  if (w) { pending.set(id, done); w.postMessage({ id, ns }); } else queue.push({ id, ns, done });
}

function answer(res, status, body, headers) {
  res.writeHead(status, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

const server = http.createServer((req, res) => {
  const start = nowNs();
  const h = { 'X-Handler-Start': String(start), 'X-Loop': '0' };
  if (req.headers['transfer-encoding']) {
    h.Connection = 'close';
    return answer(res, 501, 'Transfer-Encoding is not supported\n', h);
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') return answer(res, 405, `method ${req.method} not allowed\n`, h);
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : req.url.slice(q + 1));
  const duration = (name, dflt) => {
    if (!params.has(name)) return dflt;
    const d = parseDuration(params.get(name));
    if (d === null || d > maxNs) {
      answer(res, 400, `${name}=${params.get(name)}: want a Go duration from 0 to 10s\n`, h);
      return null;
    }
    return d;
  };
  switch (path) {
    case '/fast':
      return answer(res, 200, 'fast\n', h);
    case '/slow': {
      const d = duration('block', opts.block);
      if (d === null) return;
      h['X-Blocked-Ns'] = String(block(d));
      return answer(res, 200, 'slow\n', h);
    }
    case '/async': {
      const d = duration('delay', opts.delay);
      if (d === null) return;
      setTimeout(() => {
        h['X-Continuation-Start'] = String(nowNs());
        h['X-Continuation-Loop'] = '0';
        answer(res, 200, 'async\n', h);
      }, d / 1e6);
      return;
    }
    case '/offload': {
      const d = duration('block', opts.block);
      if (d === null) return;
      offload(d, (blocked) => {
        h['X-Continuation-Start'] = String(nowNs());
        h['X-Continuation-Loop'] = '0';
        h['X-Blocked-Ns'] = String(blocked);
        answer(res, 200, 'offload\n', h);
      });
      return;
    }
    default:
      return answer(res, 404, `no route ${path}\n`, h);
  }
});
// Keep idle keep-alive connections open as the kit's servers do (Node's
// default closes them after 5 s), and answer malformed requests 400.
server.keepAliveTimeout = 0;
server.headersTimeout = 60e3;
server.requestTimeout = 0;
server.on('clientError', (err, socket) => {
  if (err.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
  const [status, text] = err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : [400, 'Bad Request'];
  const body = `${text}: ${err.code}\n`;
  socket.end(`HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
});
server.on('error', (err) => { console.error(`server.js: ${err.message}`); process.exit(1); });
server.listen(port, host, () => {
  const a = server.address();
  const shown = a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
  const line = `server.js: listening on http://${shown} (1 event loop, pid ${process.pid}, block ${opts.block / 1e6}ms, ${opts.workers} offload workers)`;
  console.log(line);
  if (opts.readyFile) {
    // The kit's ready file (bystander.ready/v1), written whole through a rename.
    const fs = require('node:fs');
    fs.writeFileSync(opts.readyFile + '.tmp', JSON.stringify({ schema: 'bystander.ready/v1', addr: shown, pid: process.pid, kind: 'loop', workers: 1, line }));
    fs.renameSync(opts.readyFile + '.tmp', opts.readyFile);
  }
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { server.close(); server.closeAllConnections(); process.exit(0); });
