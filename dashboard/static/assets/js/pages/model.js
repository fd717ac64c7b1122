// A model: its learning curves per checkpoint step, its checkpoints with
// their metrics (which can be deleted), the command to chat with one, and
// its recent jobs.

import {get, del, query, errorText} from '../api.js';
import {h, replace, fmtNum, time, announce} from '../dom.js';
import {MetricCharts} from '../charts.js';
import {errorBox, pageHeader, poller, redraw} from './common.js';
import {jobRow, jobTableHead} from './jobs.js';

const mainMetrics = ['val/reward', 'train/reward', 'train/loss'];
const rowLimit = 200;

export async function renderModel(main, {params}) {
  const id = params[0];
  let model;
  try {
    model = await get(`/preview/models/${encodeURIComponent(id)}`);
  } catch (err) {
    document.title = 'Model · trainyard';
    replace(main, h('section', {class: 'page'},
      pageHeader({crumbs: [{href: '/models', label: 'Models'}], title: 'Model'}), errorBox(err)));
    return null;
  }
  document.title = `${model.name} · trainyard`;
  const curves = h('div', {class: 'curves', id: 'curves'});
  const chat = h('div', {class: 'chat-cmd'});
  const cpSection = h('div', {id: 'checkpoints'});
  const jobs = h('div', {id: 'model-jobs'});
  const status = h('div', {class: 'status-line', role: 'status'});
  replace(main, h('section', {class: 'page', 'data-page': 'model', 'data-model-id': model.id},
    pageHeader({
      crumbs: [{href: '/models', label: 'Models'}],
      title: model.name,
      sub: [`${model.entity}/${model.project} · base model `, h('code', {}, model.base_model), ' · created ', time(model.created_at)],
      actions: [h('a', {class: 'btn', href: `/jobs?model_id=${model.id}`, 'data-link': true}, 'Jobs of this model')],
    }),
    status,
    h('section', {class: 'card', 'aria-labelledby': 'curves-h'}, h('h2', {id: 'curves-h'}, 'Learning curves'),
      h('p', {class: 'muted small'}, 'One point per checkpoint step. Pick the metrics to plot.'), curves),
    h('div', {class: 'two-col'},
      h('section', {class: 'card', 'aria-labelledby': 'cp-h'}, h('h2', {id: 'cp-h'}, 'Checkpoints'), cpSection),
      h('div', {class: 'stack'},
        h('section', {class: 'card', 'aria-labelledby': 'chat-h'}, h('h2', {id: 'chat-h'}, 'Chat with a checkpoint'), chat),
        h('section', {class: 'card', 'aria-labelledby': 'jobs-h'}, h('h2', {id: 'jobs-h'}, 'Recent jobs'), jobs)))));

  const charts = new MetricCharts(curves, {xLabel: 'step', defaults: mainMetrics, storageKey: 'model',
    emptyText: 'No checkpoint yet: the curves start with the first training job.'});
  let checkpoints = [];
  let selected = new Set();
  let showAll = false;
  let latestSeen = null;
  let chatStep = null;
  let chatPinned = false; // the visitor chose a step: new ones do not replace it

  async function loadCheckpoints() {
    const all = [];
    let after = '';
    for (;;) {
      const page = await get(`/preview/models/${model.id}/checkpoints${query({limit: 100, after})}`);
      all.push(...page.data);
      if (!page.has_more) return all;
      after = page.last_id;
    }
  }

  function drawCurves() {
    const series = new Map();
    for (const cp of checkpoints) {
      for (const [k, v] of Object.entries(cp.metrics)) {
        if (typeof v !== 'number') continue;
        if (!series.has(k)) series.set(k, {x: [], y: []});
        series.get(k).x.push(cp.step);
        series.get(k).y.push(v);
      }
    }
    charts.update(series);
  }

  function drawCheckpoints() {
    const newest = [...checkpoints].reverse();
    const rows = showAll ? newest : newest.slice(0, rowLimit);
    const deleteBtn = h('button', {type: 'button', class: 'btn btn-danger', id: 'delete-checkpoints', onclick: confirmDelete});
    const label = () => {
      deleteBtn.disabled = !selected.size;
      deleteBtn.textContent = selected.size ? `Delete ${selected.size} checkpoint${selected.size === 1 ? '' : 's'}…` : 'Delete selected…';
    };
    label();
    replace(cpSection,
      checkpoints.length ? h('div', {class: 'table-wrap tall'}, h('table', {class: 'table table-compact', id: 'checkpoints-table'},
        h('thead', {}, h('tr', {},
          h('th', {scope: 'col', class: 'check'}, h('span', {class: 'sr-only'}, 'Select')),
          h('th', {scope: 'col', class: 'num'}, 'Step'),
          mainMetrics.map((m) => h('th', {scope: 'col', class: 'num'}, m)),
          h('th', {scope: 'col'}, 'All metrics'))),
        h('tbody', {}, rows.map((cp) => h('tr', {'data-step': cp.step},
          h('td', {class: 'check'}, h('input', {type: 'checkbox', checked: selected.has(cp.step),
            'aria-label': `Select step ${cp.step}`, 'data-focus-key': `cp-${cp.step}`,
            onchange: (e) => { if (e.target.checked) selected.add(cp.step); else selected.delete(cp.step); label(); }})),
          h('td', {class: 'num'}, String(cp.step)),
          mainMetrics.map((m) => h('td', {class: 'num'}, m in cp.metrics ? fmtNum(cp.metrics[m]) : '—')),
          h('td', {}, metricDetails(cp)))))))
        : h('p', {class: 'muted'}, 'No checkpoints yet.'),
      newest.length > rows.length ? h('button', {type: 'button', class: 'btn btn-quiet', onclick: () => { showAll = true; drawCheckpoints(); }},
        `Show all ${newest.length} checkpoints`) : null,
      checkpoints.length ? h('div', {class: 'row-actions', id: 'delete-area'}, deleteBtn) : null);
  }

  function confirmDelete() {
    const steps = [...selected].sort((a, b) => a - b);
    const area = document.getElementById('delete-area');
    const yes = h('button', {type: 'button', class: 'btn btn-danger'}, 'Delete');
    const no = h('button', {type: 'button', class: 'btn'}, 'Keep them');
    replace(area, h('p', {class: 'confirm'}, `Delete step${steps.length === 1 ? '' : 's'} ${steps.join(', ')}? `,
      'Their weights are removed from storage; this cannot be undone.'), yes, no);
    no.addEventListener('click', () => drawCheckpoints());
    yes.addEventListener('click', async () => {
      yes.disabled = true;
      try {
        const r = await del(`/preview/models/${model.id}/checkpoints`, {steps});
        selected = new Set();
        const msg = `Deleted ${r.deleted_count} checkpoint${r.deleted_count === 1 ? '' : 's'}` +
          (r.not_found_steps.length ? `; not found: ${r.not_found_steps.join(', ')}` : '') + '.';
        replace(status, h('p', {class: 'ok'}, msg));
        announce(msg);
        await refresh(true);
      } catch (err) {
        replace(area, h('p', {class: 'error', role: 'alert'}, errorText(err)), no);
      }
    });
    yes.focus();
  }

  function drawChat() {
    const steps = checkpoints.map((c) => c.step).reverse();
    if (!steps.length) {
      replace(chat, h('p', {class: 'muted'}, 'Train the model once to chat with a checkpoint; the base model answers as ',
        h('code', {}, model.base_model), '.'));
      return;
    }
    if (!chatPinned || !steps.includes(chatStep)) chatStep = steps[0];
    const cmd = () => chatCommand(model, chatStep);
    const pre = h('pre', {class: 'cmd', id: 'chat-command', tabindex: 0}, cmd());
    const select = h('select', {id: 'chat-step', 'aria-label': 'Checkpoint step'},
      steps.map((s) => h('option', {value: s, selected: s === chatStep}, `step ${s}${s === steps[0] ? ' (newest)' : ''}`)));
    select.addEventListener('change', () => {
      chatStep = Number(select.value);
      chatPinned = true;
      pre.textContent = cmd();
    });
    replace(chat, h('div', {class: 'inline-form'}, h('label', {for: 'chat-step'}, 'Checkpoint'), select, copyBtn(cmd)), pre,
      h('p', {class: 'muted small'}, 'Set ', h('code', {}, 'TRAINYARD_API_KEY'), ' to your key first.'));
  }

  async function drawJobs() {
    const page = await get(`/preview/training-jobs${query({model_id: model.id, limit: 5})}`);
    const opts = {model: false, duration: false};
    redraw(jobs, page.data, () => replace(jobs, page.data.length
      ? h('div', {class: 'table-wrap'}, h('table', {class: 'table table-compact', id: 'model-jobs-table'}, jobTableHead(opts),
        h('tbody', {}, page.data.map((j) => jobRow(j, opts)))))
      : h('p', {class: 'muted'}, 'No jobs yet.')));
  }

  // refresh reloads the checkpoints when the newest one changed (a new
  // step, or metrics logged into it), or always when forced.
  async function refresh(force) {
    const m = await get(`/preview/models/${model.id}`);
    const key = JSON.stringify(m.latest_checkpoint);
    if (force || key !== latestSeen) {
      checkpoints = await loadCheckpoints();
      latestSeen = key;
      const present = new Set(checkpoints.map((c) => c.step));
      selected = new Set([...selected].filter((s) => present.has(s)));
      drawCurves();
      redraw(cpSection, {checkpoints, showAll, selected: [...selected]}, drawCheckpoints);
      redraw(chat, checkpoints.map((c) => c.step), drawChat);
    }
    await drawJobs();
  }

  const poll = poller(async () => {
    try {
      await refresh(false);
      if (status.querySelector('.error-box')) replace(status);
    } catch (err) {
      replace(status, errorBox(err));
    }
  }, 3000);
  return () => {
    poll.stop();
    charts.destroy();
  };
}

function metricDetails(cp) {
  const keys = Object.keys(cp.metrics).sort();
  if (!keys.length) return h('span', {class: 'muted'}, '—');
  return h('details', {}, h('summary', {}, `${keys.length} metric${keys.length === 1 ? '' : 's'}`),
    h('dl', {class: 'metrics'}, keys.map((k) => [h('dt', {}, k), h('dd', {}, fmtNum(cp.metrics[k]))])));
}

// chatCommand is a curl call of the chat completions route on the model's
// checkpoint at step; the key stays in the visitor's shell.
function chatCommand(model, step) {
  const name = JSON.stringify(`wandb-artifact:///${model.entity}/${model.project}/${model.name}:step${step}`);
  const q = (t) => t.replace(/'/g, "'\\''");
  return `curl ${location.origin}/v1/chat/completions \\\n` +
    '  -H "Authorization: Bearer $TRAINYARD_API_KEY" \\\n' +
    '  -H "Content-Type: application/json" \\\n' +
    `  -d '{"model": ${q(name)},\n` +
    '       "messages": [{"role": "user", "content": "Hello!"}],\n' +
    '       "max_tokens": 64}\'';
}

function copyBtn(text) {
  const btn = h('button', {type: 'button', class: 'btn btn-small'}, 'Copy');
  btn.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text());
      btn.textContent = 'Copied';
    } catch {
      const pre = document.getElementById('chat-command');
      getSelection().selectAllChildren(pre);
      btn.textContent = 'Selected: press Ctrl+C';
    }
    setTimeout(() => { btn.textContent = 'Copy'; }, 2000);
  });
  return btn;
}

