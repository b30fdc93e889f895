// SPDX-License-Identifier: MIT
//
// Preload (node --import ./bind-localhost.mjs app.js) that keeps every TCP
// listener of the process on 127.0.0.1. server-everything calls
// app.listen(PORT) with no host, which binds every interface; test fixtures
// must only ever be reachable on loopback.
//
// Any host the program asks for (none, "0.0.0.0", "::", or a real address) is
// replaced by 127.0.0.1. Unix socket paths and inherited handles are left alone.
//
// With MX_PORT_FILE set, the port of the first TCP listener is written to that
// file once it is listening (written to a temporary name, then renamed, so a
// reader never sees a partial number). With PORT=0 this gives a race-free port.

import fs from 'node:fs';
import net from 'node:net';

const HOST = '127.0.0.1';
const portFile = process.env.MX_PORT_FILE || '';
let portWritten = false;

function isPort(v) {
    return typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v));
}

// listen(port[, host][, backlog][, cb]) or listen(options[, cb]) or
// listen(path|handle[, backlog][, cb]).
function pinArgs(args) {
    const first = args[0];
    if (first === undefined || typeof first === 'function' || isPort(first)) {
        const port = isPort(first) ? first : 0;
        const rest = typeof first === 'function' ? args : args.slice(1);
        if (typeof rest[0] === 'string')
            rest.shift();
        return { tcp: true, args: [port, HOST, ...rest] };
    }
    if (first === null || typeof first !== 'object')
        return { tcp: false, args };
    const isHandle = first instanceof net.Server || first.fd !== undefined ||
        first.handle !== undefined || first._handle !== undefined;
    if (!isHandle && first.path === undefined)
        return { tcp: true, args: [{ ...first, host: HOST }, ...args.slice(1)] };
    return { tcp: false, args };
}

function writePortFile(server) {
    if (!portFile || portWritten)
        return;
    const addr = server.address();
    if (!addr || typeof addr !== 'object')
        return;
    portWritten = true;
    const tmp = `${portFile}.tmp${process.pid}`;
    fs.writeFileSync(tmp, `${addr.port}\n`);
    fs.renameSync(tmp, portFile);
}

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
    const pinned = pinArgs(args);
    if (pinned.tcp)
        this.once('listening', () => writePortFile(this));
    return listen.apply(this, pinned.args);
};
