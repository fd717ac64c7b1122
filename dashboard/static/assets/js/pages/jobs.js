// Jobs: the account's training jobs, newest first, with live status and
// progress; ?model_id= narrows them to one model.

import {get, query} from '../api.js';
import {h, replace, time, shortId, duration, statusBadge, progressBar, isTerminal} from '../dom.js';
import {errorBox, pageHeader, poller, redraw} from './common.js';

const pageSize = 50;
// Non-terminal jobs on screen whose live progress is asked of the API at
// each refresh (their GET includes what the workflow knows right now).
const liveLimit = 20;

// modelNames caches model id -> name for the pages' tables.
const modelNames = new Map();

let namesLoaded = null;

// loadAllModelNames fills the cache with the account's models (a few
// pages), once per visit of the page; the jobs are fetched meanwhile.
function loadAllModelNames() {
  if (!namesLoaded) {
    namesLoaded = (async () => {
      let after = '';
      for (let i = 0; i < 5; i++) {
        const page = await get(`/preview/models${query({limit: 100, after})}`);
        page.data.forEach((m) => modelNames.set(m.id, m.name));
        if (!page.has_more) break;
        after = page.last_id;
      }
    })().catch((err) => {
      namesLoaded = null;
      throw err;
    });
  }
  return namesLoaded;
}

// loadModelNames names the models of ids: the account's first models, then
// any ids still unknown, one GET each, at most a handful.
async function loadModelNames(ids) {
  await loadAllModelNames();
  const unknown = [...new Set(ids)].filter((id) => !modelNames.has(id)).slice(0, 10);
  await Promise.all(unknown.map((id) => get(`/preview/models/${id}`)
    .then((m) => modelNames.set(m.id, m.name))
    .catch(() => modelNames.set(id, shortId(id)))));
}

// jobTableHead and jobRow draw jobs the same way on every page.
export function jobTableHead({model = true, duration = true} = {}) {
  return h('thead', {}, h('tr', {},
    h('th', {scope: 'col'}, 'Job'), h('th', {scope: 'col'}, 'Type'),
    model ? h('th', {scope: 'col'}, 'Model') : null,
    h('th', {scope: 'col'}, 'Status'), h('th', {scope: 'col', class: 'progress-col'}, 'Progress'),
    h('th', {scope: 'col'}, 'Created'), duration ? h('th', {scope: 'col', class: 'num'}, 'Duration') : null));
}

export function jobRow(j, {model = true, duration: dur = true} = {}) {
  return h('tr', {'data-job-id': j.id, 'data-status': j.status},
    h('th', {scope: 'row'}, h('a', {href: `/jobs/${j.id}`, 'data-link': true, class: 'mono', title: j.id}, shortId(j.id))),
    h('td', {}, j.type.toUpperCase()),
    model ? h('td', {}, h('a', {href: `/models/${j.model_id}`, 'data-link': true}, modelNames.get(j.model_id) || shortId(j.model_id))) : null,
    h('td', {}, statusBadge(j.status), j.phase && !isTerminal(j.status) ? h('span', {class: 'muted small'}, ` ${j.phase}`) : null),
    h('td', {}, progressBar(j.current_step, j.total_steps, j.status)),
    h('td', {}, time(j.created_at)),
    dur ? h('td', {class: 'num'}, j.started_at ? duration(j.started_at, j.finished_at) : '—') : null);
}

export async function renderJobs(main, {query: q}) {
  const modelId = q.get('model_id') || '';
  document.title = 'Jobs · trainyard';
  const filter = h('div', {class: 'filter'});
  const body = h('div', {class: 'table-wrap'}, h('p', {class: 'muted loading'}, 'Loading jobs…'));
  const more = h('div', {class: 'more'});
  replace(main, h('section', {class: 'page', 'data-page': 'jobs'},
    pageHeader({title: 'Jobs', sub: 'RL and SFT training jobs, newest first. Running jobs update live.'}),
    filter, body, more));

  let jobs = [];
  let extra = [];
  let hasMore = false;
  let lastId = '';
  const load = (after) => get(`/preview/training-jobs${query({model_id: modelId, limit: pageSize, after})}`);

  function draw() {
    redraw(body, jobs, () => replace(body, jobs.length
      ? h('table', {class: 'table', id: 'jobs-table'}, h('caption', {class: 'sr-only'}, 'Training jobs'),
        jobTableHead(), h('tbody', {}, jobs.map((j) => jobRow(j))))
      : h('div', {class: 'empty'}, h('p', {}, modelId ? 'This model has no jobs yet.' : 'No jobs yet.'),
        h('p', {class: 'muted'}, 'Submit one with ', h('code', {}, 'POST /v1/preview/training-jobs'), ' or ',
          h('code', {}, 'POST /v1/preview/sft-training-jobs'), '.'))));
    redraw(more, hasMore, () => replace(more,
      hasMore ? h('button', {type: 'button', class: 'btn', onclick: loadMore}, 'Load more jobs') : null));
  }

  async function loadMore() {
    try {
      const page = await load(lastId);
      await loadModelNames(page.data.map((j) => j.model_id));
      extra = extra.concat(page.data);
      jobs = jobs.concat(page.data);
      hasMore = page.has_more;
      lastId = page.last_id || lastId;
      draw();
    } catch (err) {
      delete more.dataset.snapshot;
      replace(more, errorBox(err, {retry: loadMore}));
    }
  }

  namesLoaded = null; // models may have been created since the last visit
  loadAllModelNames().catch(() => {});
  const poll = poller(async () => {
    try {
      const page = await load('');
      await loadModelNames(page.data.map((j) => j.model_id));
      if (modelId) {
        replace(filter, h('p', {}, 'Jobs of model ', h('a', {href: `/models/${modelId}`, 'data-link': true},
          modelNames.get(modelId) || shortId(modelId)), ' · ', h('a', {href: '/jobs', 'data-link': true}, 'all jobs')));
      }
      // The list is what is stored; a running job's GET adds what its
      // workflow knows this second (phase, steps not yet stored).
      const live = await Promise.all(page.data.filter((j) => !isTerminal(j.status)).slice(0, liveLimit)
        .map((j) => get(`/preview/training-jobs/${j.id}`).catch(() => j)));
      const byId = new Map(live.map((j) => [j.id, j]));
      const fresh = page.data.map((j) => byId.get(j.id) || j);
      const seen = new Set(fresh.map((j) => j.id));
      jobs = fresh.concat(extra.filter((j) => !seen.has(j.id)));
      if (!extra.length) {
        hasMore = page.has_more;
        lastId = page.last_id;
      }
      draw();
    } catch (err) {
      delete body.dataset.snapshot;
      replace(body, errorBox(err));
    }
  }, 2000);
  return () => poll.stop();
}
