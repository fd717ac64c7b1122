// Models: the account's models with their base model, newest step and the
// newest checkpoint's val/reward and train/loss, newest model first.

import {get, query} from '../api.js';
import {h, replace, fmtNum, time} from '../dom.js';
import {errorBox, pageHeader, poller, redraw} from './common.js';

const pageSize = 100;

export async function renderModels(main) {
  document.title = 'Models · trainyard';
  const body = h('div', {class: 'table-wrap'}, h('p', {class: 'muted loading'}, 'Loading models…'));
  const more = h('div', {class: 'more'});
  replace(main, h('section', {class: 'page', 'data-page': 'models'},
    pageHeader({title: 'Models', sub: 'Every model of this account, with the step its newest checkpoint reached.'}),
    body, more));

  let models = [];
  let hasMore = false;
  let lastId = '';

  const load = (after) => get(`/preview/models${query({limit: pageSize, after})}`);
  let extra = []; // models of the pages after the first, loaded on demand

  function draw() {
    redraw(body, models, drawTable);
    redraw(more, hasMore, () => replace(more,
      hasMore ? h('button', {type: 'button', class: 'btn', onclick: loadMore}, 'Load more models') : null));
  }

  function drawTable() {
    if (!models.length) {
      replace(body, h('div', {class: 'empty'},
        h('p', {}, 'No models yet.'),
        h('p', {class: 'muted'}, 'Create one with ', h('code', {}, 'POST /v1/preview/models'),
          ', or run ', h('code', {}, 'go run ./examples/rl-toy'), '.')));
    } else {
      replace(body, h('table', {class: 'table', id: 'models-table'},
        h('caption', {class: 'sr-only'}, 'Models'),
        h('thead', {}, h('tr', {},
          h('th', {scope: 'col'}, 'Model'), h('th', {scope: 'col'}, 'Base model'),
          h('th', {scope: 'col', class: 'num'}, 'Step'), h('th', {scope: 'col', class: 'num'}, 'val/reward'),
          h('th', {scope: 'col', class: 'num'}, 'train/loss'), h('th', {scope: 'col'}, 'Last checkpoint'))),
        h('tbody', {}, models.map(row))));
    }
  }

  function row(m) {
    const cp = m.latest_checkpoint;
    const metric = (k) => (cp && k in cp.metrics ? fmtNum(cp.metrics[k]) : '—');
    return h('tr', {'data-model-id': m.id},
      h('th', {scope: 'row'}, h('a', {href: `/models/${m.id}`, 'data-link': true, class: 'model-name'}, m.name),
        h('span', {class: 'muted small'}, ` ${m.entity}/${m.project}`)),
      h('td', {}, h('code', {}, m.base_model)),
      h('td', {class: 'num', 'data-col': 'step'}, cp ? String(cp.step) : '—'),
      h('td', {class: 'num', 'data-col': 'val/reward'}, metric('val/reward')),
      h('td', {class: 'num', 'data-col': 'train/loss'}, metric('train/loss')),
      h('td', {}, cp ? time(cp.created_at) : h('span', {class: 'muted'}, 'not trained yet')));
  }

  async function loadMore() {
    try {
      const page = await load(lastId);
      extra = extra.concat(page.data);
      models = models.concat(page.data);
      hasMore = page.has_more;
      lastId = page.last_id || lastId;
      draw();
    } catch (err) {
      delete more.dataset.snapshot;
      replace(more, errorBox(err, {retry: loadMore}));
    }
  }

  // The first page is refreshed while the page is open, so new models
  // and steps show up; pages loaded with "Load more" stay as they were.
  const poll = poller(async () => {
    try {
      const page = await load('');
      const seen = new Set(page.data.map((m) => m.id));
      models = page.data.concat(extra.filter((m) => !seen.has(m.id)));
      if (!extra.length) {
        hasMore = page.has_more;
        lastId = page.last_id;
      }
      draw();
    } catch (err) {
      delete body.dataset.snapshot;
      replace(body, errorBox(err));
    }
  }, 5000);
  return () => poll.stop();
}
