// SPDX-License-Identifier: MIT
//
// SVG plots of bench/suite.sh's latency rows (the results TSV: kind, name,
// round, key, value), written next to its markdown report:
//   PREFIX-latency.svg  tools/call latency at p50, p90 and p99 of each
//                       contender and of the direct calls it was measured
//                       against (medians over rounds), one curve each;
//   PREFIX-added.svg    what each contender adds over direct at p50 and p99.
// No script in them; every label escaped. Prints one line per file:
// "FILE CURVES" (how many curves or bars it holds), which suite.sh checks.
//   node plots.mjs RESULTS.tsv PREFIX
import fs from 'node:fs';

const [file, prefix] = process.argv.slice(2);
const rows = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => l.split('\t'));
const median = (a) => {
  const s = a.map(Number).filter((v) => Number.isFinite(v)).sort((x, y) => x - y);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const get = (name, key) => median(rows.filter((r) => r[0] === 'lat' && r[1] === name && r[3] === key).map((r) => r[4]));
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const palette = ['#0969da', '#cf222e', '#1a7f37', '#9a6700', '#8250df', '#bf3989', '#57606a', '#0a3069', '#953800', '#116329'];

const names = [...new Set(rows.filter((r) => r[0] === 'lat' && !r[1].startsWith('direct@')).map((r) => r[1]))];
const pcts = [['p50', 0.5], ['p90', 0.9], ['p99', 0.99]];
const series = [];
for (const n of names) {
  const pts = pcts.map(([k, f]) => [get(n, `tools/call.${k}`), f]);
  if (pts.every(([us]) => Number.isFinite(us))) series.push({ label: n, pts });
}
// direct: the median of the direct rows measured beside every contender
const direct = pcts.map(([k, f]) => [median(names.map((n) => get(`direct@${n}`, `tools/call.${k}`))), f]);
if (direct.every(([us]) => Number.isFinite(us))) series.unshift({ label: 'direct', pts: direct });

const W = 720, H = 320, L = 60, R = 190, T = 34, B = 42;
function latency() {
  const all = series.flatMap((s) => s.pts.map(([us]) => Math.max(us, 10) / 1000));
  const e0 = Math.floor(Math.log10(Math.min(...all, 1))), e1 = Math.max(Math.ceil(Math.log10(Math.max(...all, 1))), e0 + 1);
  const X = (ms) => L + ((Math.log10(Math.max(ms, 0.01)) - e0) / (e1 - e0)) * (W - L - R);
  const Y = (f) => H - B - f * (H - T - B);
  const o = [`<svg xmlns="http://www.w3.org/2000/svg" class="cdf" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui,sans-serif" font-size="12">`,
    '<title>tools/call latency by contender (p50, p90, p99)</title>',
    '<text x="8" y="20" font-weight="600">tools/call latency by contender: share of calls at or below (p50, p90, p99)</text>'];
  for (let e = e0; e <= e1; e++) {
    o.push(`<line x1="${X(10 ** e).toFixed(1)}" y1="${Y(0)}" x2="${X(10 ** e).toFixed(1)}" y2="${Y(1)}" stroke="#ddd"/>` +
      `<text x="${X(10 ** e).toFixed(1)}" y="${Y(0) + 16}" text-anchor="middle" fill="#555">${10 ** e >= 1000 ? `${10 ** e / 1000} s` : `${+(10 ** e).toPrecision(1)} ms`}</text>`);
  }
  for (const f of [0, 0.5, 0.9, 1]) {
    o.push(`<line x1="${L}" y1="${Y(f).toFixed(1)}" x2="${W - R}" y2="${Y(f).toFixed(1)}" stroke="#ddd"/><text x="${L - 6}" y="${(Y(f) + 4).toFixed(1)}" text-anchor="end" fill="#555">${f}</text>`);
  }
  series.forEach((s, i) => {
    const c = palette[i % palette.length];
    const d = s.pts.map(([us, f], k) => `${k ? 'L' : 'M'}${X(us / 1000).toFixed(1)} ${Y(f).toFixed(1)}`).join(' ');
    o.push(`<path class="curve" data-series="${esc(s.label)}" fill="none" stroke="${c}" stroke-width="2" d="${d}"/>`);
    o.push(`<rect x="${W - R + 16}" y="${T + 20 * i + 4}" width="14" height="4" fill="${c}"/><text x="${W - R + 36}" y="${T + 20 * i + 10}">${esc(s.label)}</text>`);
  });
  o.push('</svg>');
  return [o.join('\n') + '\n', series.length];
}

function added() {
  const bars = [];
  for (const n of names) {
    for (const k of ['p50', 'p99']) {
      const v = get(n, `tools/call.${k}`) - get(`direct@${n}`, `tools/call.${k}`);
      if (Number.isFinite(v)) bars.push({ label: `${n} ${k}`, series: `added ${k}`, ms: v / 1000 });
    }
  }
  const h = T + B + 22 * Math.max(bars.length, 1);
  const lo = Math.min(0, ...bars.map((b) => b.ms)), hi = Math.max(lo + 0.001, ...bars.map((b) => b.ms));
  const X = (ms) => 220 + ((ms - lo) / (hi - lo)) * (W - R - 220);
  const o = [`<svg xmlns="http://www.w3.org/2000/svg" class="bars" width="${W}" height="${h}" viewBox="0 0 ${W} ${h}" font-family="system-ui,sans-serif" font-size="12">`,
    '<title>What each contender adds over direct calls</title>',
    '<text x="8" y="20" font-weight="600">What each contender adds to a tools/call over direct (medians over rounds)</text>',
    `<line x1="${X(0).toFixed(1)}" y1="${T - 4}" x2="${X(0).toFixed(1)}" y2="${h - B + 4}" stroke="#999"/>`];
  const legend = [];
  bars.forEach((b, i) => {
    let c = legend.indexOf(b.series);
    if (c < 0) {
      c = legend.push(b.series) - 1;
      o.push(`<rect x="${W - R + 16}" y="${T + 20 * c + 4}" width="14" height="4" fill="${palette[c]}"/><text x="${W - R + 36}" y="${T + 20 * c + 10}">${esc(b.series)}</text>`);
    }
    const y = T + 22 * i, x0 = X(Math.min(0, b.ms)), x1 = X(Math.max(0, b.ms));
    o.push(`<text x="212" y="${y + 15}" text-anchor="end">${esc(b.label)}</text>` +
      `<rect class="bar" data-series="${esc(b.series)}" x="${x0.toFixed(1)}" y="${y + 4}" width="${(x1 - x0).toFixed(1)}" height="14" fill="${palette[c]}"/>` +
      `<text x="${(x1 + 4).toFixed(1)}" y="${y + 15}">${b.ms.toFixed(3)} ms</text>`);
  });
  o.push('</svg>');
  return [o.join('\n') + '\n', bars.length];
}

for (const [suffix, f] of [['latency', latency], ['added', added]]) {
  const [svg, n] = f();
  fs.writeFileSync(`${prefix}-${suffix}.svg`, svg);
  console.log(`${prefix}-${suffix}.svg ${n}`);
}
