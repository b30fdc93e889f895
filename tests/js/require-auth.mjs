// SPDX-License-Identifier: MIT
//
// Preload (node --import ./require-auth.mjs app.js) that puts a bearer-token
// check in front of every HTTP server of the process, so a server with no
// authentication of its own (server-everything) behaves like a sandboxed MCP
// server behind its provider's proxy. Every request whose Authorization header
// is not exactly "Bearer <MX_UPSTREAM_BEARER>" gets a 401 JSON answer and never
// reaches the application.
//
// The token is read once at start and removed from process.env, so the
// application cannot hand it out (server-everything's get-env tool prints
// its whole environment). Nothing here logs or stores a header value; it
// keeps two counters, served without credential at GET /__auth_stats.

import crypto from 'node:crypto';
import http from 'node:http';

const token = process.env.MX_UPSTREAM_BEARER || '';
delete process.env.MX_UPSTREAM_BEARER;
if (token.length === 0) {
    process.stderr.write('require-auth: MX_UPSTREAM_BEARER is not set; refusing to start\n');
    process.exit(2);
}
const expected = Buffer.from(`Bearer ${token}`);
const stats = { accepted: 0, rejected: 0 };

function authorized(req) {
    const values = req.headersDistinct?.authorization;
    if (!values || values.length !== 1)
        return false;
    const got = Buffer.from(values[0]);
    // Lengths are compared first because timingSafeEqual needs equal lengths;
    // the length of a test token is no secret.
    return got.length === expected.length && crypto.timingSafeEqual(got, expected);
}

function reply(res, status, obj, extra = {}) {
    const body = JSON.stringify(obj);
    res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        ...extra,
    });
    res.end(body);
}

// Wrapping emit() catches the request whichever way the application attached
// its handler (createServer(fn), on('request'), express's app.listen()).
const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, req, res, ...rest) {
    if (event !== 'request')
        return emit.call(this, event, req, res, ...rest);
    const path = (req.url || '').split('?')[0];
    if (req.method === 'GET' && path === '/__auth_stats') {
        reply(res, 200, stats);
        return true;
    }
    if (!authorized(req)) {
        stats.rejected++;
        process.stderr.write(`require-auth: 401 ${req.method} ${path}\n`);
        reply(res, 401, { error: 'unauthorized', message: 'missing or wrong bearer token' },
              { 'www-authenticate': 'Bearer realm="mcplex-test"' });
        return true;
    }
    stats.accepted++;
    return emit.call(this, event, req, res, ...rest);
};
