// SPDX-License-Identifier: MIT
//
// Turns bench/suite.sh's results (TSV: kind, name, round, key, value) into
// the markdown report: medians over rounds; ratios against nginx taken
// within each round (mcplex and nginx measured back to back), then the
// median of those.
//   node report.mjs RESULTS.tsv ROUNDS SECONDS N_LATENCY "name=idle/peak/anon/pss ..." SMOKE N_EVERYTHING
import fs from 'node:fs';
import os from 'node:os';

const [file, rounds, secs, nLat, memArg, smoke, nEv] = process.argv.slice(2);
const rows = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t'));
const median = (a) => {
    const s = a.map(Number).filter((v) => !Number.isNaN(v)).sort((x, y) => x - y);
    if (!s.length) return NaN;
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const sel = (kind, name, key) => rows.filter((r) => r[0] === kind && r[1] === name && r[3] === key);
const get = (kind, name, key) => median(sel(kind, name, key).map((r) => r[4]));
const raw = (kind, name, key) => sel(kind, name, key).map((r) => r[4]);
const sumRaw = (kind, name, suffix) =>
    rows.filter((r) => r[0] === kind && r[1] === name && r[3].endsWith(`.${suffix}`)).reduce((a, r) => a + Number(r[4]), 0);
// round -> value of one measure
const byRound = (kind, name, key) => {
    const m = new Map();
    for (const r of sel(kind, name, key)) m.set(r[2], Number(r[4]));
    return m;
};
// the median over rounds of f(round), for the rounds where f is a number
const perRound = (f) => {
    const rs = [...new Set(rows.map((r) => r[2]))];
    return median(rs.map(f).filter((v) => Number.isFinite(v)));
};
// mcplex over nginx, round by round
const ratio = (kind, mx, ng, key) => {
    const a = byRound(kind, mx, key);
    const b = byRound(kind, ng, key);
    return perRound((r) => (a.has(r) && b.has(r) && b.get(r) !== 0 ? a.get(r) / b.get(r) : NaN));
};
// latency a contender adds over direct (same bench run), round by round
const addedIn = (name, pct, r) => byRound('lat', name, `tools/call.${pct}`).get(r) - byRound('lat', `direct@${name}`, `tools/call.${pct}`).get(r);
const addedRatio = (mx, ng, pct) => perRound((r) => addedIn(mx, pct, r) / addedIn(ng, pct, r));

const fmt = (v, d = 0) => (Number.isFinite(v) ? v.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }) : '–');
const x = (v) => (Number.isFinite(v) ? `${v.toFixed(2)}×` : '–');
const mib = (kb) => fmt(kb / 1024, 1);
const out = [];
const p = (s = '') => out.push(s);

const load = os.loadavg().map((v) => v.toFixed(2)).join(' ');
p(`Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, ` +
    `Linux ${os.release()}, load average at the end ${load}; ${rounds} round(s), loads ${secs} s each, ` +
    `${nLat} sequential calls per latency row (${nEv} with server-everything). Everything on 127.0.0.1; the load generator, the proxies ` +
    `and the upstream share the CPUs, so compare ratios within this run, not absolute numbers across machines. ` +
    `mcplex is measured at both endpoints: \`/mcp\` (merged; one upstream behind it, so its tools keep their names) ` +
    `and \`/mcp/<server>\`; nginx proxies straight to the upstream and is the baseline of every ratio, ` +
    `taken round by round against the nginx figure of the same round.`);
if (smoke === '1') p('\n**Smoke run: too short to judge times; it only shows that every part works.**');
p();

// ---- latency ----
const added = (name, pct) => get('lat', name, `tools/call.${pct}`) - get('lat', `direct@${name}`, `tools/call.${pct}`);
const latTable = (title, list, note) => {
    p(title);
    p();
    p('| contender | endpoint | direct p50 µs | p50 µs | p90 µs | p99 µs | added p50 µs | added p99 µs | added p50 × nginx | added p99 × nginx | errors (all rows) |');
    p('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const [name, label, path, ng] of list) {
        const d50 = get('lat', `direct@${name}`, 'tools/call.p50');
        p(`| ${label} | ${path} | ${fmt(d50)} | ${fmt(get('lat', name, 'tools/call.p50'))} | ${fmt(get('lat', name, 'tools/call.p90'))} | ` +
            `${fmt(get('lat', name, 'tools/call.p99'))} | ${fmt(added(name, 'p50'))} | ${fmt(added(name, 'p99'))} | ` +
            `${ng ? x(addedRatio(name, ng, 'p50')) : '–'} | ${ng ? x(addedRatio(name, ng, 'p99')) : '–'} | ` +
            `${sumRaw('lat', name, 'errors')} of ${sumRaw('lat', name, 'ok') + sumRaw('lat', name, 'errors')} |`);
    }
    p();
    if (note) {
        p(note);
        p();
    }
};
latTable('### Latency, one call at a time (`mcplex bench`, tools/call echo), sandbox-sim upstream', [
    ['nginx', 'nginx', '/mcp/sim', null],
    ['mcplex', 'mcplex', '/mcp/sim', 'nginx'],
    ['mcplex-mcp', 'mcplex', '/mcp', 'nginx'],
    ['nginx-tls', 'nginx-tls', '/mcp/sim', null],
    ['mcplex-tls', 'mcplex-tls', '/mcp/sim', 'nginx-tls'],
    ['mcplex-tls-mcp', 'mcplex-tls', '/mcp', 'nginx-tls'],
], '"-tls": the client speaks TLS to the proxy (h2 by ALPN), the proxy plain HTTP/1.1 to the upstream. ' +
    'Direct is measured in the same run, interleaved call by call, so each row has its own direct column. ' +
    'Each `mcplex bench` run opens its client session first (initialize at the endpoint, mcplex\'s own session at both).');
latTable('### Latency, one call at a time, server-everything upstream (Node, answers in SSE)', [
    ['ev-nginx', 'nginx', '/mcp/ev', null],
    ['ev-mcplex', 'mcplex', '/mcp/ev', 'ev-nginx'],
    ['ev-mcplex-mcp', 'mcplex', '/mcp', 'ev-nginx'],
], 'Plain HTTP/1.1 throughout; a separate mcplex with server-everything as its only upstream.');

// ---- throughput ----
p('### Throughput and CPU per call (wrk: HTTP/1.1, every answer checked; h2load: h2c, or h2 over TLS)');
p();
p('| client, connections | mcplex endpoint | direct calls/s | nginx calls/s | mcplex calls/s | mcplex × nginx | nginx CPU µs/call | mcplex CPU µs/call | CPU × nginx |');
p('|---|---|---:|---:|---:|---:|---:|---:|---:|');
const tput = {};
const concs = [...new Set(rows.filter((r) => r[0] === 'load').map((r) => (r[3].match(/\.c(\d+)\./) || [])[1]).filter(Boolean))]
    .map(Number)
    .sort((a, b) => a - b);
for (const [tool, label, ng, mxs] of [
    ['wrk', 'wrk h1', 'nginx', [['mcplex', '/mcp/sim'], ['mcplex-mcp', '/mcp']]],
    ['h2load', 'h2load h2c', 'nginx', [['mcplex', '/mcp/sim'], ['mcplex-mcp', '/mcp']]],
    ['h2load', 'h2load h2 TLS', 'nginx-tls', [['mcplex-tls', '/mcp/sim'], ['mcplex-tls-mcp', '/mcp']]],
]) {
    for (const c of concs) {
        const k = `${tool}.c${c}`;
        const d = label === 'h2load h2 TLS' ? NaN : get('load', 'direct', `${k}.rps`);
        const n = get('load', ng, `${k}.rps`);
        if (!Number.isFinite(n)) continue;
        const nc = get('load', ng, `${k}.cpu_us_per_call`);
        for (const [mx, path] of mxs) {
            const m = get('load', mx, `${k}.rps`);
            const mc = get('load', mx, `${k}.cpu_us_per_call`);
            const r = ratio('load', mx, ng, `${k}.rps`);
            const rc = ratio('load', mx, ng, `${k}.cpu_us_per_call`);
            tput[`${label}.${c}.${path}`] = { ratio: r, cpu: rc };
            p(`| ${label}, ${c} | ${path} | ${fmt(d)} | ${fmt(n)} | ${fmt(m)} | ${x(r)} | ${fmt(nc, 1)} | ${fmt(mc, 1)} | ${x(rc)} |`);
        }
    }
}
p();
p('CPU µs/call: utime+stime of the proxy process(es) from /proc/<pid>/stat over the load, divided by the calls ' +
    '(nginx: master and its one worker). nginx serves `/mcp/sim` only (a location proxied to the upstream); ' +
    'both mcplex rows compare with the same nginx figure.');
p();

p('#### server-everything upstream, wrk h1, 16 connections (short loads)');
p();
p('| path | calls/s | × nginx | CPU µs/call | CPU × nginx |');
p('|---|---:|---:|---:|---:|');
for (const [name, label] of [['direct-ev', 'direct'], ['ev-nginx', 'nginx /mcp/ev'], ['ev-mcplex', 'mcplex /mcp/ev'], ['ev-mcplex-mcp', 'mcplex /mcp']]) {
    const mx = name.startsWith('ev-mcplex');
    p(`| ${label} | ${fmt(get('load', name, 'wrk.c16.rps'))} | ${mx ? x(ratio('load', name, 'ev-nginx', 'wrk.c16.rps')) : '–'} | ` +
        `${fmt(get('load', name, 'wrk.c16.cpu_us_per_call'), 1)} | ${mx ? x(ratio('load', name, 'ev-nginx', 'wrk.c16.cpu_us_per_call')) : '–'} |`);
}
p();

// ---- SDK client ----
p('### The official SDK client, 16 concurrent calls (bench/mcpload.mjs)');
p();
p('| contender | endpoint | client transport | calls/s | p50 µs | p99 µs | CPU µs/call | calls/s × mcp-hub |');
p('|---|---|---|---:|---:|---:|---:|---:|');
const hub = get('sdk', 'mcp-hub', 'rps');
for (const [name, label, path, tr] of [
    ['nginx', 'nginx', '/mcp/sim', 'Streamable HTTP'],
    ['mcplex', 'mcplex', '/mcp/sim', 'Streamable HTTP'],
    ['mcplex-mcp', 'mcplex', '/mcp', 'Streamable HTTP'],
    ['mcp-hub', 'mcp-hub', '/mcp', 'HTTP+SSE (legacy, its only one)'],
]) {
    const r = get('sdk', name, 'rps');
    p(`| ${label} | ${path} | ${tr} | ${fmt(r)} | ${fmt(get('sdk', name, 'p50'))} | ${fmt(get('sdk', name, 'p99'))} | ` +
        `${fmt(get('sdk', name, 'cpu_us_per_call'), 1)} | ${x(r / hub)} |`);
}
p();
p('The Node client itself costs ~100–150 µs per call and caps the rate, so this table separates mcp-hub from the ' +
    'others but not nginx from mcplex; the wrk and h2load rows do that.');
p();

// ---- system calls ----
const sys = {};
for (const name of ['nginx', 'mcplex', 'mcplex-mcp']) {
    const calls = get('sys', name, 'calls');
    const list = rows
        .filter((r) => r[0] === 'sys' && r[1] === name && r[3].startsWith('sc.'))
        .map((r) => {
            const [n, e] = r[4].split(' ').map(Number);
            return { sc: r[3].slice(3), n, e };
        });
    const total = list.find((s) => s.sc === 'total');
    sys[name] = { calls, total: total ? total.n : NaN, errors: total ? total.e : NaN, list: list.filter((s) => s.sc !== 'total') };
}
p('### System calls per call (strace -c over wrk h1, 16 connections, a short load)');
p();
p('| proxy | endpoint | calls completed | system calls | per call | failed system calls |');
p('|---|---|---:|---:|---:|---|');
const failed = (s) => {
    const f = s.list.filter((v) => v.e > 0).sort((a, b) => b.e - a.e);
    return f.length ? `**${f.map((v) => `${v.sc} ${fmt(v.e)} (${fmt(v.e / s.calls, 2)} per call)`).join(', ')}**` : 'none';
};
for (const [name, label, path] of [['nginx', 'nginx (master + worker)', '/mcp/sim'], ['mcplex', 'mcplex', '/mcp/sim'], ['mcplex-mcp', 'mcplex', '/mcp']]) {
    const s = sys[name];
    p(`| ${label} | ${path} | ${fmt(s.calls)} | ${fmt(s.total)} | ${fmt(s.total / s.calls, 2)} | ${failed(s)} |`);
}
p();
p('mcplex\'s five most frequent system calls, per call (errors in brackets):');
p();
p('| endpoint | 1st | 2nd | 3rd | 4th | 5th |');
p('|---|---|---|---|---|---|');
for (const [name, path] of [['mcplex', '/mcp/sim'], ['mcplex-mcp', '/mcp']]) {
    const s = sys[name];
    const top = [...s.list].sort((a, b) => b.n - a.n).slice(0, 5);
    while (top.length < 5) top.push(null);
    p(`| ${path} | ${top.map((v) => (v ? `${v.sc} ${fmt(v.n / s.calls, 2)}${v.e ? ` (${fmt(v.e / s.calls, 2)} failed)` : ''}` : '–')).join(' | ')} |`);
}
p();
p('strace stops the traced process at every system call, so these loads are slow; only the count per call ' +
    'means something. The count covers strace\'s whole window (attach to detach), slightly more than the load.');
p();

// ---- memory ----
p('### Memory');
p();
p('| process | RSS after start MiB | of which its own (RssAnon) MiB | PSS MiB | peak over the run (VmHWM) MiB |');
p('|---|---:|---:|---:|---:|');
const memLabel = { nginx: 'nginx (master + worker)', mcplex: 'mcplex (sandbox-sim)', 'mcplex-tls': 'mcplex-tls (sandbox-sim)', 'mcplex-ev': 'mcplex (server-everything)', 'mcp-hub': 'mcp-hub' };
for (const kv of memArg.split(' ')) {
    const [name, v] = kv.split('=');
    const [idle, peak, anon, pss] = v.split('/').map(Number);
    p(`| ${memLabel[name] ?? name} | ${mib(idle)} | ${mib(anon)} | ${mib(pss)} | ${mib(peak)} |`);
}
p();
p('RSS includes the pages of shared libraries (libcurl and its dependencies, OpenSSL, libc), which other ' +
    'processes share; RssAnon is memory the process itself allocated; PSS (/proc/<pid>/smaps_rollup) counts each ' +
    'shared page divided by the number of processes that map it.');
p();

// ---- scale: sessions ----
const cap = get('meta', 'cap', 'max_sessions');
p('### Scale: idle client sessions at /mcp (one upstream), a fresh mcplex');
p();
p('| sessions asked for | open (per /health) | refused | RSS MiB | RssAnon MiB | PSS MiB | KiB per session (vs 1) | tools/call /mcp/sim p50 µs | p99 µs | tools/call /mcp p50 µs | p99 µs |');
p('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
const levels = [...new Set(rows.filter((r) => r[0] === 'scale').map((r) => r[1]))];
const rss1 = get('scale', levels[0], 'rss_kb');
const perSession = (l) => (get('scale', l, 'rss_kb') - rss1) / (get('scale', l, 'sessions') - get('scale', levels[0], 'sessions'));
for (const l of levels) {
    const [c50, c99] = (raw('scale', l, 'call_sim_p50_p99')[0] || '').split(' ').map(Number);
    const [m50, m99] = (raw('scale', l, 'call_mcp_p50_p99')[0] || '').split(' ').map(Number);
    const s = get('scale', l, 'sessions');
    const refused = raw('scale', l, 'refused').map(Number).reduce((a, b) => a + b, 0);
    p(`| ${fmt(Number(l))} | ${fmt(s)} | ${fmt(refused)} | ${mib(get('scale', l, 'rss_kb'))} | ${mib(get('scale', l, 'anon_kb'))} | ` +
        `${mib(get('scale', l, 'pss_kb'))} | ${l === levels[0] ? '–' : fmt(perSession(l), 1)} | ${fmt(c50)} | ${fmt(c99)} | ${fmt(m50)} | ${fmt(m99)} |`);
}
p();
p(`mcplex caps open client sessions with \`[listen] max_sessions\` (default 4,096; over it an initialize gets 503); ` +
    `this run sets it to ${fmt(cap)}; the bench's own session counts too, so at the cap its call is refused (–). KiB per session is the growth of RSS over the first level, divided by the sessions added.`);
p();

// ---- scale: upstreams ----
p('### Scale: upstreams at /mcp, each with its generated tools (sandbox-sim --extra-tools)');
p();
p('| upstreams | tools listed | pages | RSS after start MiB | RssAnon MiB | PSS MiB | first initialize ms, cold (fan-out) | tools/list first ms | tools/list again ms (cached) | first initialize ms, catalogue on disk | tools/list first ms, catalogue on disk |');
p('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
const ups = [...new Set(rows.filter((r) => r[0] === 'ups').map((r) => r[1]))];
for (const k of ups) {
    p(`| ${k} | ${fmt(get('ups', k, 'tools'))} | ${fmt(get('ups', k, 'pages'))} | ${mib(get('ups', k, 'rss_kb'))} | ${mib(get('ups', k, 'anon_kb'))} | ` +
        `${mib(get('ups', k, 'pss_kb'))} | ${fmt(get('ups', k, 'init_ms'), 1)} | ${fmt(get('ups', k, 'list_first_ms'), 1)} | ` +
        `${fmt(get('ups', k, 'list_again_ms'), 1)} | ${fmt(get('ups', k, 'init_cat_ms'), 1)} | ${fmt(get('ups', k, 'list_first_cat_ms'), 1)} |`);
}
p();
p('tools/list times are the sum of curl\'s time_total over every page (page_size = 10000), on one client session. ' +
    'Cold: a fresh state_dir, so the first initialize fans out to every upstream. Catalogue on disk: a second ' +
    'mcplex started on the state_dir the first one left, which answers initialize and the lists from its catalogue ' +
    'without contacting an upstream.');
p();

// ---- targets ----
if (smoke !== '1') {
    p('### Targets (issue 18; ratios within this run)');
    p();
    const t = [];
    const chk = (what, v, ok) => t.push(`| ${what} | ${v} | ${ok ? 'met' : '**not met**'} |`);
    for (const [name, path] of [['mcplex-mcp', '/mcp'], ['mcplex', '/mcp/sim']]) {
        const r = addedRatio(name, 'nginx', 'p50');
        chk(`added p50, one call at a time, plain h1, at ${path} ≤ 1.0× nginx's`, x(r), r <= 1.0);
    }
    {
        const r = addedRatio('ev-mcplex-mcp', 'ev-nginx', 'p50');
        chk('added p50, one call at a time, server-everything upstream, at /mcp ≤ 1.0× nginx\'s', x(r), r <= 1.0);
    }
    const tp = (label, c, path) => tput[`${label}.${c}.${path}`] ?? { ratio: NaN, cpu: NaN };
    for (const c of [16, 64]) {
        for (const path of ['/mcp', '/mcp/sim']) {
            const r = tp('wrk h1', c, path).ratio;
            chk(`wrk h1 calls/s at ${c}, ${path} ≥ 0.9× nginx`, x(r), r >= 0.9);
        }
    }
    for (const label of ['h2load h2c', 'h2load h2 TLS']) {
        for (const c of [16, 64]) {
            for (const path of ['/mcp', '/mcp/sim']) {
                const r = tp(label, c, path).ratio;
                chk(`${label} calls/s at ${c}, ${path} ≥ 0.9× nginx`, x(r), r >= 0.9);
            }
        }
    }
    for (const c of [16, 64]) {
        for (const path of ['/mcp', '/mcp/sim']) {
            const r = tp('wrk h1', c, path).cpu;
            chk(`proxy CPU per call (wrk ${c}), ${path} ≤ 1.5× nginx`, x(r), r <= 1.5);
        }
    }
    for (const [name, path] of [['mcplex-mcp', '/mcp'], ['mcplex', '/mcp/sim']]) {
        const v = sys[name].total / sys[name].calls;
        chk(`system calls per proxied call, ${path} ≤ 6`, `${fmt(v, 2)} (nginx ${fmt(sys.nginx.total / sys.nginx.calls, 2)})`, v <= 6);
    }
    const top = ups[ups.length - 1];
    const topLabel = `${top} upstreams × ${fmt(get('ups', top, 'tools') / Number(top) - 5)} tools`;
    {
        const v = get('ups', top, 'list_again_ms');
        chk(`cached tools/list, ${topLabel}, all pages ≤ 20 ms`, `${fmt(v, 1)} ms`, v <= 20);
    }
    {
        const v = get('ups', top, 'init_ms');
        chk(`first initialize at /mcp, ${top} upstreams, cold without catalogue ≤ 300 ms`, `${fmt(v, 1)} ms`, v <= 300);
        const w = get('ups', top, 'init_cat_ms');
        chk(`first initialize at /mcp, ${top} upstreams, catalogue on disk ≤ 50 ms`, `${fmt(w, 1)} ms`, w <= 50);
    }
    {
        const v = get('ups', '3', 'rss_kb');
        chk('idle RSS, 3 upstreams < 10 MiB', `${mib(v)} MiB (PSS ${mib(get('ups', '3', 'pss_kb'))} MiB, RssAnon ${mib(get('ups', '3', 'anon_kb'))} MiB)`, v / 1024 < 10);
    }
    {
        // the highest level where every session opened, so a refusal at a
        // cap does not dilute the figure
        const full = levels.filter((l) => get('scale', l, 'sessions') >= Number(l));
        const hi = full.length ? full[full.length - 1] : levels[levels.length - 1];
        const v = perSession(hi);
        chk(`memory per idle client session ≤ 2 KiB (at ${fmt(Number(hi))})`, `${fmt(v, 2)} KiB`, v <= 2);
    }
    p('| target | this run | |');
    p('|---|---:|---|');
    for (const l of t) p(l);
    p();
    p('Wake-on-use targets come from bench/wake.sh, not this suite.');
    p();
}
process.stdout.write(out.join('\n') + '\n');
