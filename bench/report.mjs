// SPDX-License-Identifier: MIT
//
// Turns bench/suite.sh's results (TSV: kind, name, round, key, value) into
// the markdown report: medians over rounds, ratios within the run.
//   node report.mjs RESULTS.tsv ROUNDS SECONDS N_LATENCY "name=idle/peak ..." SMOKE
import fs from 'node:fs';
import os from 'node:os';

const [file, rounds, secs, nLat, rssArg, smoke] = process.argv.slice(2);
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
const get = (kind, name, key) => median(rows.filter((r) => r[0] === kind && r[1] === name && r[3] === key).map((r) => r[4]));
const sumRaw = (kind, name, suffix) =>
    rows.filter((r) => r[0] === kind && r[1] === name && r[3].endsWith(`.${suffix}`)).reduce((a, r) => a + Number(r[4]), 0);
const raw = (kind, name, key) => rows.filter((r) => r[0] === kind && r[1] === name && r[3] === key).map((r) => r[4]);
const fmt = (v, d = 0) => (Number.isFinite(v) ? v.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }) : '–');
const x = (v) => (Number.isFinite(v) ? `${v.toFixed(2)}×` : '–');
const out = [];
const p = (s = '') => out.push(s);

const load = os.loadavg().map((v) => v.toFixed(2)).join(' ');
p(`Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, ` +
    `Linux ${os.release()}, load average at the end ${load}; ${rounds} round(s), loads ${secs} s each, ` +
    `${nLat} sequential calls per latency row. Everything on 127.0.0.1; the load generator, the proxies ` +
    `and the upstream share the CPUs, so compare ratios within this run, not absolute numbers across machines.`);
if (smoke === '1') p('\n**Smoke run: too short to judge times; it only shows that every part works.**');
p();

// Latency: added by each proxy over direct, measured call by call in one mcplex-bench run.
p('### Latency, one call at a time (`mcplex bench`, tools/call echo)');
p();
p('| contender | direct p50 µs | p50 µs | p90 µs | p99 µs | added p50 µs | added p99 µs | added p50 × nginx | added p99 × nginx | errors (all rows) |');
p('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
const added = {};
for (const name of ['nginx', 'mcplex', 'nginx-tls', 'mcplex-tls']) {
    const d50 = get('lat', `direct@${name}`, 'tools/call.p50');
    const d99 = get('lat', `direct@${name}`, 'tools/call.p99');
    const g50 = get('lat', name, 'tools/call.p50');
    const g90 = get('lat', name, 'tools/call.p90');
    const g99 = get('lat', name, 'tools/call.p99');
    added[name] = { p50: g50 - d50, p99: g99 - d99 };
    const ref = name.startsWith('mcplex') ? added[name.replace('mcplex', 'nginx')] : null;
    p(`| ${name} | ${fmt(d50)} | ${fmt(g50)} | ${fmt(g90)} | ${fmt(g99)} | ${fmt(added[name].p50)} | ${fmt(added[name].p99)} | ` +
        `${ref ? x(added[name].p50 / ref.p50) : '–'} | ${ref ? x(added[name].p99 / ref.p99) : '–'} | ` +
        `${sumRaw('lat', name, 'errors')} of ${sumRaw('lat', name, 'ok') + sumRaw('lat', name, 'errors')} |`);
}
p();
p('"-tls": the client speaks TLS to the proxy (h2 by ALPN), the proxy plain HTTP/1.1 to the upstream. ' +
    'Direct is measured in the same run, interleaved call by call, so each row has its own direct column.');
p();

// Throughput and CPU per call.
p('### Throughput and CPU per call (wrk: HTTP/1.1, every answer checked; h2load: h2c, or h2 over TLS)');
p();
p('| client, connections | direct calls/s | nginx calls/s | mcplex calls/s | mcplex × nginx | nginx CPU µs/call | mcplex CPU µs/call | CPU × nginx |');
p('|---|---:|---:|---:|---:|---:|---:|---:|');
const tput = {};
for (const [tool, label, ng, mx] of [
    ['wrk', 'wrk h1', 'nginx', 'mcplex'],
    ['h2load', 'h2load h2c', 'nginx', 'mcplex'],
    ['h2load', 'h2load h2 TLS', 'nginx-tls', 'mcplex-tls'],
]) {
    for (const c of [16, 64]) {
        const k = `${tool}.c${c}`;
        const d = label === 'h2load h2 TLS' ? NaN : get('load', 'direct', `${k}.rps`);
        const n = get('load', ng, `${k}.rps`);
        const m = get('load', mx, `${k}.rps`);
        const nc = get('load', ng, `${k}.cpu_us_per_call`);
        const mc = get('load', mx, `${k}.cpu_us_per_call`);
        tput[`${label}.${c}`] = { ratio: m / n, cpu: mc / nc };
        p(`| ${label}, ${c} | ${fmt(d)} | ${fmt(n)} | ${fmt(m)} | ${x(m / n)} | ${fmt(nc, 1)} | ${fmt(mc, 1)} | ${x(mc / nc)} |`);
    }
}
p();
p('CPU µs/call: utime+stime of the proxy process(es) from /proc/<pid>/stat over the load, divided by the calls ' +
    '(nginx: master and its one worker).');
p();

p('### The official SDK client, 16 concurrent calls (bench/mcpload.mjs)');
p();
p('| contender | client transport | calls/s | p50 µs | p99 µs | CPU µs/call | calls/s × mcp-hub |');
p('|---|---|---:|---:|---:|---:|---:|');
const hub = get('sdk', 'mcp-hub', 'rps');
for (const [name, tr] of [['nginx', 'Streamable HTTP'], ['mcplex', 'Streamable HTTP'], ['mcp-hub', 'HTTP+SSE (legacy, its only one)']]) {
    const r = get('sdk', name, 'rps');
    p(`| ${name} | ${tr} | ${fmt(r)} | ${fmt(get('sdk', name, 'p50'))} | ${fmt(get('sdk', name, 'p99'))} | ` +
        `${fmt(get('sdk', name, 'cpu_us_per_call'), 1)} | ${x(r / hub)} |`);
}
p();
p('The Node client itself costs ~100–150 µs per call and caps the rate, so this table separates mcp-hub from the ' +
    'others but not nginx from mcplex; the wrk and h2load rows do that.');
p();

p('### Memory (RSS)');
p();
p('| process | RSS after start MiB | of which its own (RssAnon) MiB | peak over the run (VmHWM) MiB |');
p('|---|---:|---:|---:|');
for (const kv of rssArg.split(' ')) {
    const [name, v] = kv.split('=');
    const [idle, peak, anon] = v.split('/').map(Number);
    p(`| ${name}${name === 'nginx' ? ' (master + worker)' : ''} | ${fmt(idle / 1024, 1)} | ${fmt(anon / 1024, 1)} | ${fmt(peak / 1024, 1)} |`);
}
p();
p('RSS includes the pages of shared libraries (libcurl and its dependencies, OpenSSL, libc), which other ' +
    'processes share; RssAnon is memory the process itself allocated.');
p();

p('### Scale: idle client sessions at /mcp (one upstream), a fresh mcplex');
p();
p('| sessions asked for | open (per /health) | refused | RSS MiB | RssAnon MiB | KiB per session (vs 1) | tools/call p50 µs | tools/call p99 µs |');
p('|---:|---:|---:|---:|---:|---:|---:|---:|');
const levels = [...new Set(rows.filter((r) => r[0] === 'scale').map((r) => r[1]))];
const rss1 = get('scale', levels[0], 'rss_kb');
for (const l of levels) {
    const rss = get('scale', l, 'rss_kb');
    const [c50, c99] = (raw('scale', l, 'call_p50_p99')[0] || '').split(' ').map(Number);
    const s = get('scale', l, 'sessions');
    const per = s > 1 ? (rss - rss1) / (s - get('scale', levels[0], 'sessions')) : NaN;
    const refused = raw('scale', l, 'refused').map(Number).reduce((a, b) => a + b, 0);
    p(`| ${fmt(Number(l))} | ${fmt(s)} | ${fmt(refused)} | ${fmt(rss / 1024, 1)} | ${fmt(get('scale', l, 'anon_kb') / 1024, 1)} | ${l === levels[0] ? '–' : fmt(per, 1)} | ${fmt(c50)} | ${fmt(c99)} |`);
}
p();

p('### Scale: upstreams at /mcp, each with its generated tools (sandbox-sim --extra-tools)');
p();
p('| upstreams | tools listed | RSS after start MiB | RssAnon MiB | first initialize ms (fan-out) | tools/list, first ms | tools/list again ms (cached) | pages |');
p('|---:|---:|---:|---:|---:|---:|---:|---:|');
const ups = [...new Set(rows.filter((r) => r[0] === 'ups').map((r) => r[1]))];
for (const k of ups) {
    p(`| ${k} | ${fmt(get('ups', k, 'tools'))} | ${fmt(get('ups', k, 'rss_kb') / 1024, 1)} | ${fmt(get('ups', k, 'anon_kb') / 1024, 1)} | ${fmt(get('ups', k, 'init_ms'), 1)} | ` +
        `${fmt(get('ups', k, 'list_first_ms'), 1)} | ${fmt(get('ups', k, 'list_again_ms'), 1)} | ${fmt(get('ups', k, 'pages'))} |`);
}
p();
p('tools/list times are the sum of curl\'s time_total over every page (page_size = 10000), on one client session.');
p();

if (smoke !== '1') {
    p('### Targets (ratios within this run)');
    p();
    const t = [];
    const chk = (what, v, ok) => t.push(`| ${what} | ${v} | ${ok ? 'met' : '**not met**'} |`);
    chk('added p50 ≤ 1.3× nginx\'s (plain h1)', x(added.mcplex.p50 / added.nginx.p50), added.mcplex.p50 <= 1.3 * added.nginx.p50);
    chk('added p99 ≤ 1.5× nginx\'s (plain h1)', x(added.mcplex.p99 / added.nginx.p99), added.mcplex.p99 <= 1.5 * added.nginx.p99);
    for (const c of [16, 64]) chk(`wrk calls/s at ${c} ≥ 0.8× nginx`, x(tput[`wrk h1.${c}`].ratio), tput[`wrk h1.${c}`].ratio >= 0.8);
    chk('SDK-client calls/s ≥ 10× mcp-hub', x(get('sdk', 'mcplex', 'rps') / hub), get('sdk', 'mcplex', 'rps') >= 10 * hub);
    for (const c of [16, 64]) chk(`CPU per call ≤ 2× nginx (wrk, ${c})`, x(tput[`wrk h1.${c}`].cpu), tput[`wrk h1.${c}`].cpu <= 2);
    const idle3 = get('ups', '3', 'rss_kb') / 1024;
    chk('RSS idle with 3 upstreams < 10 MiB', `${fmt(idle3, 1)} MiB (RssAnon ${fmt(get('ups', '3', 'anon_kb') / 1024, 1)} MiB)`, idle3 < 10);
    const lv = [...new Set(rows.filter((r) => r[0] === 'scale').map((r) => r[1]))];
    const hi = lv[lv.length - 1];
    const perSess = (get('scale', hi, 'rss_kb') - get('scale', lv[0], 'rss_kb')) / (get('scale', hi, 'sessions') - get('scale', lv[0], 'sessions'));
    chk(`per idle client session < 16 KiB (at ${fmt(Number(hi))})`, `${fmt(perSess, 1)} KiB`, perSess < 16);
    const l50 = get('ups', '50', 'list_again_ms');
    chk('tools/list over 50 × 1,000 tools < 20 ms from cache', `${fmt(l50, 1)} ms`, l50 < 20);
    p('| target | this run | |');
    p('|---|---:|---|');
    for (const l of t) p(l);
    p();
}
process.stdout.write(out.join('\n') + '\n');
