// The status page's live updates: one EventSource on /status/events. Every
// string from the gateway is set with textContent, never as HTML.
'use strict';
(function () {
  const UP_COLS = ['name', 'state', 'transport', 'revision', 'tools', 'prompts', 'resources',
    'calls', 'errors', 'p50_ms', 'p99_ms', 'last_wake_at', 'last_wake_ms', 'catalogue',
    'last_error'];
  const CALL_COLS = ['at', 'session', 'method', 'server', 'target', 'wait_ms', 'wake_ms',
    'upstream_ms', 'total_ms', 'outcome'];
  const REN_COLS = ['name', 'kind', 'server', 'original'];
  const MAX_CALLS = 100;

  // The same text the server renders (statuspage.c, put_text): durations
  // (the *_ms members) in ms, everything else as it is.
  function text(v, key) {
    if (v === null || v === undefined) return '-';
    if (typeof v === 'number' && key && key.endsWith('_ms')) {
      return (v < 10 ? v.toFixed(2) : v.toFixed(0)) + ' ms';
    }
    return String(v);
  }

  function row(o, cols, isUpstream) {
    const tr = document.createElement('tr');
    if (isUpstream) tr.dataset.server = text(o.name);
    for (const k of cols) {
      const td = document.createElement('td');
      td.textContent = text(o[k], k);
      if (isUpstream && k === 'state') td.className = 'state st-' + text(o.state);
      tr.appendChild(td);
    }
    return tr;
  }

  function fill(id, list, cols, isUpstream, newestFirst) {
    const body = document.querySelector('#' + id + ' tbody');
    const rows = (list || []).map((o) => row(o, cols, isUpstream));
    if (newestFirst) rows.reverse();
    body.replaceChildren(...rows);
  }

  function addCall(c) {
    const body = document.querySelector('#calls tbody');
    const tr = row(c, CALL_COLS, false);
    tr.className = 'fresh';
    body.insertBefore(tr, body.firstChild);
    while (body.children.length > MAX_CALLS) body.removeChild(body.lastChild);
    setTimeout(() => tr.classList.remove('fresh'), 1500);
  }

  function state(s) {
    fill('upstreams', s.upstreams, UP_COLS, true, false);
    fill('renamed', s.renamed, REN_COLS, false, false);
    if (s.calls) fill('calls', s.calls, CALL_COLS, false, true);
    if (s.sessions) {
      document.getElementById('sess-legacy').textContent = text(s.sessions.legacy);
      document.getElementById('sess-modern').textContent = text(s.sessions.modern_requests);
    }
  }

  function live(on, what) {
    const el = document.getElementById('live');
    el.textContent = what;
    el.className = 'live ' + (on ? 'on' : 'off');
  }

  const es = new EventSource('/status/events');
  es.onopen = () => live(true, 'live');
  es.onerror = () => live(false, 'reconnecting');
  es.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.type === 'state') state(m);
    else if (m.type === 'call') addCall(m.call);
  };
})();
