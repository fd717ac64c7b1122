// DOM building and formatting helpers. Everything the API returns reaches
// the page through text nodes and attributes set here, never as HTML, so
// names and messages cannot inject markup.

// h builds an element: h('a', {href: '/x', class: 'btn'}, 'text', child...).
// Attributes whose value is null, undefined or false are left out; on*
// attributes with function values become event listeners.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// replace empties el and fills it with children.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// shortId is the end of a UUID, enough to tell ids apart on screen. (Ids
// are UUIDv7, whose first digits are a timestamp that jobs submitted in the
// same minute share; the last ones are random.)
export function shortId(id) {
  return id ? id.slice(-8) : '';
}

// fmtNum prints a metric with about four significant digits.
export function fmtNum(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v)) return v.toLocaleString('en-US');
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2);
  return Number(v.toPrecision(4)).toString();
}

// relTime says how long ago t (an RFC 3339 string) was.
export function relTime(t) {
  if (!t) return '—';
  const s = (Date.now() - new Date(t).getTime()) / 1000;
  if (s < 5) return 'just now';
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

// absTime prints t in the visitor's locale; it goes in title attributes
// next to relTime.
export function absTime(t) {
  return t ? new Date(t).toLocaleString() : '';
}

// duration prints the time between two RFC 3339 strings (to now when the
// end is missing).
export function duration(from, to) {
  if (!from) return '—';
  let s = Math.max(0, ((to ? new Date(to) : new Date()) - new Date(from)) / 1000);
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  s = Math.round(s % 60);
  if (m < 60) return `${m} min ${s} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

// time is a <time> element showing relTime with the exact time on hover.
export function time(t) {
  return h('time', {datetime: t || null, title: absTime(t)}, relTime(t));
}

const terminal = new Set(['COMPLETED', 'FAILED', 'CANCELLED']);

// isTerminal reports whether a job status is final.
export function isTerminal(status) {
  return terminal.has(status);
}

// statusBadge shows a job status in its colour.
export function statusBadge(status) {
  return h('span', {class: `badge badge-${String(status).toLowerCase()}`, 'data-status': status}, status);
}

// progressBar shows done of total steps; total 0 means not known yet.
export function progressBar(done, total, status) {
  const known = total > 0;
  const pct = known ? Math.min(100, (100 * done) / total) : 0;
  const label = known ? `${done} / ${total}` : (isTerminal(status) ? `${done}` : 'waiting');
  const bar = h('div', {
    class: `progress${known ? '' : ' progress-unknown'}${status === 'FAILED' ? ' progress-failed' : ''}`,
    role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': known ? total : null,
    'aria-valuenow': known ? done : null, 'aria-valuetext': `${label} steps`,
  }, h('div', {class: 'progress-fill'}));
  bar.firstChild.style.width = `${pct}%`;
  return h('div', {class: 'progress-wrap'}, bar, h('span', {class: 'progress-label'}, label));
}

// announce tells screen readers what changed (the page's live region).
export function announce(msg) {
  const live = document.getElementById('live');
  if (live) live.textContent = msg;
}
