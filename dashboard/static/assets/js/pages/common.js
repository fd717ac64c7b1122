// Pieces the pages share: the error box, the page header and polling.

import {errorText, forgetKey} from '../api.js';
import {h, relTime} from '../dom.js';

// errorBox shows what went wrong in the API's words; a 401 (the key was
// revoked, or the database was reset) offers to sign in again.
export function errorBox(err, {retry} = {}) {
  const box = h('div', {class: 'error-box', role: 'alert'}, h('p', {class: 'error-text'}, errorText(err)));
  if (err && err.status === 401) {
    box.append(h('button', {type: 'button', class: 'btn', onclick: () => { forgetKey(); location.assign('/'); }},
      'Sign in with another key'));
  }
  if (retry) box.append(h('button', {type: 'button', class: 'btn', onclick: retry}, 'Try again'));
  return box;
}

// pageHeader is a page's title row: crumbs, the h1 and actions on the right.
export function pageHeader({crumbs = [], title, sub, actions = []}) {
  return h('header', {class: 'page-header'},
    crumbs.length ? h('nav', {class: 'crumbs', 'aria-label': 'Breadcrumb'},
      crumbs.map((c) => [h('a', {href: c.href, 'data-link': true}, c.label), h('span', {'aria-hidden': 'true'}, ' / ')])) : null,
    h('div', {class: 'page-title'},
      h('div', {}, h('h1', {}, title), sub ? h('p', {class: 'sub'}, sub) : null),
      h('div', {class: 'actions'}, actions)));
}

// poller runs fn now and then every ms while the tab is visible, never
// twice at once; stop() ends it.
export function poller(fn, ms) {
  let timer = null;
  let stopped = false;
  const tick = async () => {
    if (stopped) return;
    if (document.visibilityState === 'visible') {
      try {
        await fn();
      } catch { /* fn shows its own errors */ }
    }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  tick();
  return {stop() { stopped = true; clearTimeout(timer); }};
}

// redraw rebuilds el's content with draw when the data it shows changed
// (compared as JSON with the last call's), giving the keyboard focus back
// to the rebuilt control the visitor was on; otherwise it only brings the
// relative times up to date. It returns whether it redrew.
export function redraw(el, data, draw) {
  const snap = JSON.stringify(data);
  if (el.dataset.snapshot === snap) {
    for (const t of el.querySelectorAll('time[datetime]')) t.textContent = relTime(t.getAttribute('datetime'));
    return false;
  }
  const active = document.activeElement;
  const key = active && el.contains(active) ? focusKey(active) : null;
  draw();
  el.dataset.snapshot = snap;
  if (key) {
    const again = [...el.querySelectorAll('a, button, input, select, [tabindex]')].find((x) => focusKey(x) === key);
    if (again) again.focus({preventScroll: true});
  }
  return true;
}

function focusKey(el) {
  return `${el.tagName}|${el.getAttribute('href') || el.id || el.dataset.focusKey || el.textContent}`;
}
