'use strict';
// The accounts service: sign-in and the item catalogue, on Node's http module (no framework).
//
//   POST /login   {"user":"alice","password":"..."} -> 200 {"token":"..."}, or 401
//   GET  /items   the catalogue, streamed
//   GET  /health  {"status":"ok"}
//
// Passwords are kept as PBKDF2-SHA256 hashes; a sign-in hashes the password it is given to compare.
//
//   node app.js [--addr 127.0.0.1:3000] [--iterations 10000]
//
// It stops on SIGTERM or SIGINT.
const http = require('http');
const crypto = require('crypto');

const usage = 'usage: node app.js [--addr HOST:PORT] [--iterations N]';
const opts = { addr: '127.0.0.1:3000', iterations: '10000' };
const argv = process.argv.slice(2);
function fail(why) {
  console.error(`app.js: ${why}\n${usage}`);
  process.exit(2);
}
for (let i = 0; i < argv.length; i++) {
  let [name, value] = argv[i].split(/=(.*)/s);
  if (name === '-h' || name === '--help') {
    console.log(usage);
    process.exit(0);
  }
  if (!name.startsWith('--') || !(name.slice(2) in opts)) fail(`unknown argument ${argv[i]}`);
  if (value === undefined) {
    if (i + 1 >= argv.length) fail(`${name} needs a value`);
    value = argv[++i];
  }
  opts[name.slice(2)] = value;
}
const colon = opts.addr.lastIndexOf(':');
const host = opts.addr.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
const port = Number(opts.addr.slice(colon + 1));
if (colon <= 0 || !Number.isInteger(port) || port < 0 || port > 65535) fail(`--addr ${opts.addr} is not HOST:PORT`);
const iterations = Number(opts.iterations);
if (!Number.isInteger(iterations) || iterations < 1 || iterations > 10000000) {
  fail(`--iterations ${opts.iterations} is not a number from 1 to 10000000`);
}

function hash(password, salt) {
  return crypto.pbkdf2Sync(password, salt, iterations, 32, 'sha256');
}

// The users, as a database would give them: a salt and the password's hash each.
const users = new Map();
for (const [user, password] of [['alice', 'wonderland'], ['bob', 'builder']]) {
  const salt = crypto.randomBytes(16);
  users.set(user, { salt, hash: hash(password, salt) });
}
const nobody = { salt: crypto.randomBytes(16), hash: Buffer.alloc(32) };

const items = [];
for (let id = 1; id <= 50; id++) items.push({ id, name: `item ${id}`, price: 100 + ((id * 37) % 900) });

function send(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function login(req, res) {
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size > 1 << 16) {
      send(res, 413, { error: 'too large' });
      req.destroy();
      return;
    }
    chunks.push(c);
  });
  req.on('end', () => {
    if (res.headersSent) return;
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch (e) {
      send(res, 400, { error: 'the body is not JSON' });
      return;
    }
    if (typeof body.user !== 'string' || typeof body.password !== 'string') {
      send(res, 400, { error: 'user and password are needed' });
      return;
    }
    const u = users.get(body.user) || nobody; // hash for an unknown user too: the same time either way
    const ok = crypto.timingSafeEqual(hash(body.password, u.salt), u.hash) && u !== nobody;
    if (!ok) {
      send(res, 401, { error: 'bad user or password' });
      return;
    }
    send(res, 200, { user: body.user, token: crypto.randomBytes(24).toString('hex') });
  });
}

function listItems(res) {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.write('[');
  items.forEach((it, i) => res.write((i > 0 ? ',' : '') + JSON.stringify(it)));
  res.end(']');
}

const server = http.createServer((req, res) => {
  const path = req.url.split('?')[0];
  if (path === '/login') {
    if (req.method === 'POST') return login(req, res);
  } else if (path === '/items') {
    if (req.method === 'GET') return listItems(res);
  } else if (path === '/health') {
    if (req.method === 'GET') return send(res, 200, { status: 'ok' });
  } else {
    req.resume();
    return send(res, 404, { error: 'not found' });
  }
  req.resume();
  send(res, 405, { error: 'method not allowed' });
});

server.on('error', (e) => {
  console.error(`app.js: ${e.message}`);
  process.exit(1);
});
server.listen(port, host, () => {
  const a = server.address();
  console.log(`app.js: listening on ${a.address}:${a.port}, pid ${process.pid}, ${iterations} PBKDF2 iterations`);
});

function stop() {
  server.close(() => process.exit(0));
  server.closeAllConnections();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
