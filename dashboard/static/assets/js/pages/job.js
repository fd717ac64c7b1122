// A job: its status and progress, live events and per-step charts (through
// the events stream), its request's settings, and the actions this server
// offers for it: cancel, and pause, resume and retry where the routes exist.

import {get, post, config, errorText} from '../api.js';
import {h, replace, time, shortId, duration, statusBadge, progressBar, isTerminal, fmtNum, announce} from '../dom.js';
import {MetricCharts} from '../charts.js';
import {streamEvents} from '../sse.js';
import {errorBox, pageHeader, poller, redraw} from './common.js';

const eventRows = 200;
const terminalEvents = new Set(['training_ended', 'training_failed']);

export async function renderJob(main, {params, navigate}) {
  const id = params[0];
  let job;
  let cfg;
  try {
    [job, cfg] = await Promise.all([get(`/preview/training-jobs/${encodeURIComponent(id)}`), config()]);
  } catch (err) {
    document.title = 'Job · trainyard';
    replace(main, h('section', {class: 'page'}, pageHeader({crumbs: [{href: '/jobs', label: 'Jobs'}], title: 'Job'}), errorBox(err)));
    return null;
  }
  let model = null;
  get(`/preview/models/${job.model_id}`).then((m) => { model = m; drawHeader(); }).catch(() => {});
  const actionsEl = h('div', {class: 'actions', id: 'job-actions'});
  const header = h('div');
  const summary = h('div', {class: 'card job-summary', id: 'job-summary'});
  const chartsEl = h('div', {id: 'job-charts'});
  const eventsEl = h('div', {id: 'events', class: 'table-wrap tall'});
  const streamState = h('span', {class: 'muted small', id: 'stream-state'});
  const settings = h('pre', {class: 'json', tabindex: 0});
  const notice = h('div', {role: 'status', class: 'status-line'});
  replace(main, h('section', {class: 'page', 'data-page': 'job', 'data-job-id': job.id},
    header, notice, summary,
    h('section', {class: 'card', 'aria-labelledby': 'steps-h'}, h('h2', {id: 'steps-h'}, 'Per-step metrics'),
      h('p', {class: 'muted small'}, 'One point per gradient step, live while the job runs.'), chartsEl),
    h('div', {class: 'two-col'},
      h('section', {class: 'card', 'aria-labelledby': 'events-h'},
        h('div', {class: 'card-title'}, h('h2', {id: 'events-h'}, 'Events'), streamState), eventsEl),
      h('section', {class: 'card', 'aria-labelledby': 'settings-h'}, h('h2', {id: 'settings-h'}, 'Request settings'), settings))));

  const charts = new MetricCharts(chartsEl, {xLabel: 'gradient step', defaults: ['loss', 'reward', 'grad_norm'], storageKey: 'job',
    emptyText: 'No gradient step yet.'});
  const events = [];
  const series = new Map();
  let steps = 0;
  let confirming = null;
  let busy = false;
  let actionError = null;

  function drawHeader() {
    const kind = job.type === 'sft' ? 'SFT' : 'RL';
    redraw(header, model && model.name, () => replace(header, pageHeader({
      crumbs: [{href: '/jobs', label: 'Jobs'}],
      title: `${kind} job ${shortId(job.id)}`,
      sub: ['on model ', h('a', {href: `/models/${job.model_id}`, 'data-link': true}, model ? model.name : shortId(job.model_id)),
        ' · submitted ', time(job.created_at), ' · ', h('code', {class: 'small'}, job.id)],
      actions: [actionsEl],
    })));
  }

  function temporalLink() {
    if (!cfg.temporal_ui_url || !job.workflow_id) return null;
    const base = `${cfg.temporal_ui_url.replace(/\/$/, '')}/namespaces/${encodeURIComponent(cfg.temporal_namespace)}/workflows`;
    const href = job.run_id ? `${base}/${encodeURIComponent(job.workflow_id)}/${encodeURIComponent(job.run_id)}/history`
      : `${base}?query=${encodeURIComponent(`WorkflowId="${job.workflow_id}"`)}`;
    return h('a', {class: 'btn ext', id: 'temporal-workflow', href, target: '_blank', rel: 'noopener noreferrer'}, 'Workflow in Temporal UI');
  }

  function drawActions() {
    const state = {status: job.status, retried: job.retried_by, run: job.run_id, confirming, busy, actionError};
    redraw(actionsEl, state, drawActionButtons);
  }

  function drawActionButtons() {
    const can = (a) => cfg.job_actions.includes(a);
    const buttons = [];
    if (confirming === 'cancel') {
      buttons.push(h('span', {class: 'confirm'}, 'Stop this job? Earlier checkpoints stay.'),
        actionButton('Cancel job', 'btn-danger', () => act('cancel', 'Cancellation requested.'), 'confirm-cancel'),
        actionButton('Keep running', '', () => { confirming = null; drawActions(); }, 'keep-running'));
    } else {
      if (can('pause') && (job.status === 'RUNNING' || job.status === 'QUEUED')) {
        buttons.push(actionButton('Pause', '', () => act('pause', 'Pause requested: the job stops after its current step.'), 'pause'));
      }
      if (can('resume') && job.status === 'PAUSED') {
        buttons.push(actionButton('Resume', 'btn-primary', () => act('resume', 'Resumed.'), 'resume'));
      }
      if (can('retry') && (job.status === 'FAILED' || job.status === 'CANCELLED') && !job.retried_by) {
        buttons.push(actionButton('Retry', 'btn-primary', () => act('retry', 'Retried as a new job.'), 'retry'));
      }
      if (can('cancel') && !isTerminal(job.status)) {
        buttons.push(actionButton('Cancel…', 'btn-danger', () => { confirming = 'cancel'; drawActions(); }, 'cancel'));
      }
      buttons.push(temporalLink());
    }
    replace(actionsEl, buttons, actionError ? h('p', {class: 'error', role: 'alert', id: 'action-error'}, actionError) : null);
    const first = actionsEl.querySelector('#action-confirm-cancel');
    if (first) first.focus();
  }

  function actionButton(label, cls, onclick, key) {
    return h('button', {type: 'button', class: `btn ${cls}`, id: `action-${key}`, disabled: busy, onclick}, label);
  }

  async function act(action, done) {
    busy = true;
    actionError = null;
    drawActions();
    try {
      const r = await post(`/preview/training-jobs/${job.id}/${action}`, undefined);
      confirming = null;
      busy = false;
      if (action === 'retry' && r && r.id && r.id !== job.id) {
        announce(done);
        navigate(`/jobs/${r.id}`);
        return;
      }
      if (r && r.id === job.id) job = r;
      replace(notice, h('p', {class: 'ok'}, done));
      announce(done);
      update();
    } catch (err) {
      busy = false;
      confirming = null;
      actionError = errorText(err);
      drawActions();
    }
  }

  function drawSummary() {
    const done = Math.max(job.current_step, steps);
    const total = job.total_steps;
    const field = (label, value) => [h('dt', {}, label), h('dd', {}, value)];
    summary.dataset.status = job.status;
    redraw(summary, {job, done}, () => replace(summary,
      h('div', {class: 'summary-top'},
        h('div', {class: 'summary-status'}, statusBadge(job.status),
          !isTerminal(job.status) && job.phase ? h('span', {class: 'phase'}, job.phase) : null),
        h('div', {class: 'summary-progress', id: 'job-progress'}, progressBar(done, total, job.status))),
      h('dl', {class: 'facts'},
        field('Steps', total ? `${done} of ${total}` : String(done)),
        field('Started', job.started_at ? time(job.started_at) : '—'),
        field('Finished', job.finished_at ? time(job.finished_at) : '—'),
        field('Duration', job.started_at ? duration(job.started_at, job.finished_at) : '—'),
        field('Workers', job.workers ? (job.workers === 1 ? '1' : `${job.workers} (each step spread over them)`) : '—'),
        field('Checkpoint', job.checkpoint_step !== null && job.checkpoint_step !== undefined
          ? h('a', {href: `/models/${job.model_id}`, 'data-link': true}, `step ${job.checkpoint_step}`) : '—'),
        job.retry_of ? field('Retry of', h('a', {href: `/jobs/${job.retry_of}`, 'data-link': true, class: 'mono'}, shortId(job.retry_of))) : null,
        job.retried_by ? field('Retried by', h('a', {href: `/jobs/${job.retried_by}`, 'data-link': true, class: 'mono'}, shortId(job.retried_by))) : null),
      job.error ? h('div', {class: 'error-box', id: 'job-error'}, h('strong', {}, 'Error: '), job.error) : null,
      job.last_error ? h('div', {class: 'warn-box', id: 'job-last-error'},
        h('strong', {}, `Retrying ${job.last_error.activity} (attempt ${job.last_error.attempt}): `), job.last_error.message,
        job.last_error.next_attempt_at ? [' · next attempt ', time(job.last_error.next_attempt_at)] : null) : null));
  }

  function drawSettings() {
    settings.textContent = JSON.stringify({
      training_data_url: job.training_data_url ?? undefined,
      config: job.config ?? undefined,
      experimental_config: job.experimental_config ?? undefined,
    }, null, 2);
  }

  let frame = 0;
  function scheduleEvents() {
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      charts.update(series);
      drawEvents();
      drawSummary();
    });
  }

  function drawEvents() {
    const shown = events.slice(-eventRows).reverse();
    replace(eventsEl, events.length ? h('table', {class: 'table table-compact', id: 'events-table'},
      h('thead', {}, h('tr', {}, h('th', {scope: 'col', class: 'num'}, '#'), h('th', {scope: 'col'}, 'Event'), h('th', {scope: 'col'}, 'Data'))),
      h('tbody', {}, shown.map((e) => h('tr', {'data-type': e.type},
        h('td', {class: 'num'}, String(e.n)), h('td', {}, h('span', {class: `event event-${e.type}`}, e.type)),
        h('td', {class: 'event-data'}, eventData(e.data))))))
      : h('p', {class: 'muted'}, 'No events yet.'),
      events.length > eventRows ? h('p', {class: 'muted small'}, `The newest ${eventRows} of ${events.length} events.`) : null);
  }

  function onEvent(ev) {
    const e = ev.data && typeof ev.data === 'object' ? ev.data : {type: ev.type, data: {}};
    events.push({n: events.length + 1, type: e.type, data: e.data || {}});
    if (e.type === 'gradient_step') {
      steps++;
      for (const [k, v] of Object.entries(e.data || {})) {
        if (typeof v !== 'number') continue;
        if (!series.has(k)) series.set(k, {x: [], y: []});
        series.get(k).x.push(steps);
        series.get(k).y.push(v);
      }
    }
    if (e.type === 'training_started' && e.data && e.data.num_gradient_steps && !job.total_steps) {
      job = {...job, total_steps: e.data.num_gradient_steps};
    }
    scheduleEvents();
  }

  function update() {
    drawHeader();
    drawActions();
    drawSummary();
    drawSettings();
  }
  update();
  drawEvents();

  const abort = new AbortController();
  replace(streamState, 'connecting…');
  streamEvents(`/v1/preview/training-jobs/${job.id}/events?stream=true`, {
    signal: abort.signal,
    onEvent: (ev) => { replace(streamState, 'live'); onEvent(ev); },
    onError: (err) => replace(streamState, `reconnecting (${err.message || err})…`),
    until: (ev) => terminalEvents.has(ev.type),
  }).then(() => {
    if (!abort.signal.aborted) replace(streamState, 'complete');
  }).catch((err) => replace(streamState, errorText(err)));

  // Status and phase come from the job itself; it is read until it ends.
  const poll = poller(async () => {
    try {
      const fresh = await get(`/preview/training-jobs/${job.id}`);
      const was = job.status;
      job = fresh;
      if (was !== job.status) announce(`Job ${job.status.toLowerCase()}`);
      drawActions();
      drawSummary();
      if (notice.querySelector('.error-box')) replace(notice);
      if (isTerminal(job.status)) poll.stop();
    } catch (err) {
      replace(notice, errorBox(err));
    }
  }, 1500);
  return () => {
    abort.abort();
    poll.stop();
    charts.destroy();
    if (frame) cancelAnimationFrame(frame);
  };
}

// eventData shows an event's data compactly: numbers rounded, the rest as
// JSON.
function eventData(data) {
  const parts = Object.entries(data || {}).map(([k, v]) =>
    h('span', {class: 'kv'}, h('span', {class: 'k'}, k), ' ', typeof v === 'number' ? fmtNum(v) : JSON.stringify(v)));
  return parts.length ? parts : h('span', {class: 'muted'}, '—');
}
