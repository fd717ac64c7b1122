// The dashboard's shell: sign-in state, the top bar and a router that maps
// the address bar's path to a page. Each page is a module whose render
// function fills <main> and returns a cleanup (timers, streams) run when
// the visitor leaves it.

import {getKey, forgetKey, config} from './api.js';
import {h, replace} from './dom.js';
import {renderSignIn} from './pages/signin.js';
import {renderModels} from './pages/models.js';
import {renderModel} from './pages/model.js';
import {renderJobs} from './pages/jobs.js';
import {renderJob} from './pages/job.js';

const routes = [
  {re: /^\/(models)?\/?$/, nav: 'models', render: renderModels},
  {re: /^\/models\/([^/]+)\/?$/, nav: 'models', render: renderModel},
  {re: /^\/jobs\/?$/, nav: 'jobs', render: renderJobs},
  {re: /^\/jobs\/([^/]+)\/?$/, nav: 'jobs', render: renderJob},
];

const main = document.getElementById('main');
const topbar = document.getElementById('topbar');
let cleanup = null;
let rendering = 0;

// navigate shows path, adding it to the history unless replace is set.
export function navigate(path, {replace: rep = false} = {}) {
  if (rep) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  render();
}

async function render() {
  const n = ++rendering;
  if (cleanup) {
    try {
      cleanup();
    } catch { /* a page's cleanup must not stop the next page */ }
    cleanup = null;
  }
  const signedIn = Boolean(getKey());
  topbar.hidden = !signedIn;
  if (!signedIn) {
    document.title = 'Sign in · trainyard';
    cleanup = renderSignIn(main, {onSignedIn: () => render()});
    return;
  }
  const path = location.pathname;
  const route = routes.find((r) => r.re.test(path));
  for (const a of topbar.querySelectorAll('[data-nav]')) {
    if (route && a.dataset.nav === route.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (!route) {
    replace(main, h('section', {class: 'page'}, h('h1', {tabindex: -1}, 'Page not found'),
      h('p', {}, h('a', {href: '/models', 'data-link': true}, 'Go to the models'))));
    focusHeading();
    return;
  }
  const params = path.match(route.re).slice(1).map((p) => p && decodeURIComponent(p));
  const c = await route.render(main, {params, query: new URLSearchParams(location.search), navigate});
  if (n !== rendering) {
    if (c) c(); // the visitor moved on while the page loaded
    return;
  }
  cleanup = c || null;
  focusHeading();
}

// focusHeading moves keyboard focus to the new page's heading, so the
// next Tab starts in the page and screen readers announce it.
function focusHeading() {
  const h1 = main.querySelector('h1');
  if (h1 && !main.contains(document.activeElement)) {
    h1.setAttribute('tabindex', '-1');
    h1.focus({preventScroll: true});
  }
}

// Same-origin links marked data-link change the page without a reload;
// modified clicks (new tab, ...) keep their usual meaning.
document.addEventListener('click', (e) => {
  const a = e.target.closest('a[data-link]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin) return;
  e.preventDefault();
  if (url.pathname + url.search !== location.pathname + location.search) navigate(url.pathname + url.search);
});

window.addEventListener('popstate', () => render());

document.getElementById('sign-out').addEventListener('click', () => {
  forgetKey();
  for (const k of Object.keys(localStorage)) {
    if (k.startsWith('trainyard.')) localStorage.removeItem(k);
  }
  history.replaceState(null, '', '/');
  render();
});

// The Temporal UI link in the top bar, when the server names one.
config().then((cfg) => {
  const a = document.getElementById('temporal-link');
  if (cfg.temporal_ui_url) {
    a.href = `${cfg.temporal_ui_url.replace(/\/$/, '')}/namespaces/${encodeURIComponent(cfg.temporal_namespace)}/workflows`;
    a.hidden = false;
  }
});

render();
