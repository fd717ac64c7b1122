// Learning curves: a list of the metrics a model or job has logged, from
// which the visitor picks, and one small uPlot chart per picked metric, so
// losses and rewards each get a scale of their own.

import {h, replace, fmtNum} from './dom.js';

const stepIncrements = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2500, 5e3, 1e4, 2e4, 25e3, 5e4, 1e5, 2e5, 5e5, 1e6];

// tickLabel prints a y-axis value in few characters: 0.25, 1.5k, 2e-4.
function tickLabel(v) {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a < 1e-3) return v.toExponential(1).replace('.0e', 'e');
  if (a >= 1e4) return `${Number((v / 1e3).toPrecision(3))}k`;
  return String(Number(v.toPrecision(3)));
}

const palette = ['#1f6feb', '#d9480f', '#2b8a3e', '#9c36b5', '#e8590c', '#0b7285', '#c2255c', '#5f3dc4'];

function colorOf(name) {
  let x = 0;
  for (const ch of name) x = (x * 31 + ch.charCodeAt(0)) >>> 0;
  return palette[x % palette.length];
}

// MetricCharts renders into el. Call update(series) with a Map from metric
// name to {x: number[], y: number[]} whenever the data changes; charts are
// updated in place. defaults are the metrics shown until the visitor picks
// (those of them that exist; else the first few).
export class MetricCharts {
  constructor(el, {xLabel = 'step', defaults = [], storageKey = '', emptyText = 'Nothing logged yet.'} = {}) {
    this.el = el;
    this.xLabel = xLabel;
    this.defaults = defaults;
    this.storageKey = storageKey ? `trainyard.metrics.${storageKey}` : '';
    this.emptyText = emptyText;
    this.series = new Map();
    this.plots = new Map(); // metric -> {plot, panel, caption}
    this.picked = this.loadPicked();
    this.picker = h('fieldset', {class: 'metric-picker'});
    this.grid = h('div', {class: 'chart-grid'});
    replace(el, this.picker, this.grid);
    this.resize = new ResizeObserver(() => this.fit());
    this.resize.observe(this.grid);
  }

  loadPicked() {
    if (!this.storageKey) return null;
    try {
      const v = JSON.parse(localStorage.getItem(this.storageKey));
      return Array.isArray(v) ? new Set(v) : null;
    } catch {
      return null;
    }
  }

  savePicked() {
    if (this.storageKey) localStorage.setItem(this.storageKey, JSON.stringify([...this.picked]));
  }

  // shown is the picked metrics that have data, in a stable order.
  shown() {
    const names = [...this.series.keys()];
    let picked = this.picked;
    if (!picked) {
      picked = new Set(this.defaults.filter((m) => this.series.has(m)));
      if (!picked.size) names.slice(0, 3).forEach((m) => picked.add(m));
    }
    const order = (m) => {
      const i = this.defaults.indexOf(m);
      return i < 0 ? this.defaults.length : i;
    };
    return names.filter((m) => picked.has(m)).sort((a, b) => order(a) - order(b) || a.localeCompare(b));
  }

  update(series) {
    const before = [...this.series.keys()].join('\n');
    this.series = series;
    if ([...series.keys()].join('\n') !== before || !this.picker.childElementCount) this.renderPicker();
    this.renderCharts();
  }

  // renderPicker shows the plotted metrics as chips that remove them, and a
  // list of the others to add one from.
  renderPicker() {
    const names = [...this.series.keys()].sort();
    const shown = this.shown();
    const setPicked = (next) => {
      this.picked = new Set(next);
      this.savePicked();
      this.renderPicker();
      this.renderCharts();
    };
    const rest = names.filter((m) => !shown.includes(m));
    const add = h('select', {'aria-label': 'Add a metric to plot', class: 'metric-add', 'data-focus-key': 'metric-add'},
      h('option', {value: ''}, rest.length ? `Add a metric (${rest.length} more)…` : 'All metrics plotted'),
      rest.map((m) => h('option', {value: m}, m)));
    add.disabled = !rest.length;
    add.addEventListener('change', () => {
      if (add.value) setPicked([...shown, add.value]);
      this.picker.querySelector('select').focus();
    });
    replace(this.picker, h('legend', {class: 'sr-only'}, 'Metrics to plot'),
      names.length ? null : h('span', {class: 'muted'}, this.emptyText),
      shown.map((m) => {
        const swatch = h('span', {class: 'swatch', 'aria-hidden': 'true'});
        swatch.style.background = colorOf(m);
        return h('button', {type: 'button', class: 'chip', 'aria-label': `Stop plotting ${m}`, 'data-metric': m,
          onclick: () => {
            const next = shown.filter((x) => x !== m);
            setPicked(next);
            const chips = this.picker.querySelectorAll('button.chip');
            (chips[Math.min(shown.indexOf(m), chips.length - 1)] || this.picker.querySelector('select')).focus();
          }}, swatch, m, h('span', {class: 'chip-x', 'aria-hidden': 'true'}, '×'));
      }),
      names.length ? add : null);
  }

  renderCharts() {
    const shown = this.shown();
    for (const [m, c] of this.plots) {
      if (!shown.includes(m)) {
        c.plot.destroy();
        c.panel.remove();
        this.plots.delete(m);
      }
    }
    shown.forEach((m, i) => {
      const s = this.series.get(m);
      let c = this.plots.get(m);
      if (!c) {
        c = this.newChart(m);
        this.plots.set(m, c);
      }
      if (this.grid.children[i] !== c.panel) this.grid.insertBefore(c.panel, this.grid.children[i] || null);
      c.plot.setData([s.x, s.y]);
      const last = s.y.length ? s.y[s.y.length - 1] : null;
      replace(c.value, last === null ? '' : fmtNum(last));
      c.panel.dataset.points = String(s.x.length);
      c.panel.dataset.lastX = s.x.length ? String(s.x[s.x.length - 1]) : '';
      c.panel.setAttribute('aria-label', `${m}: ${s.x.length} point${s.x.length === 1 ? '' : 's'}` +
        (last === null ? '' : `, latest ${fmtNum(last)} at ${this.xLabel} ${s.x[s.x.length - 1]}`));
    });
  }

  newChart(m) {
    const value = h('span', {class: 'chart-value'});
    const body = h('div', {class: 'chart-body'});
    const panel = h('figure', {class: 'chart', role: 'img', dataset: {metric: m}},
      h('figcaption', {}, h('span', {class: 'chart-name'}, m), value), body);
    this.grid.append(panel);
    const color = colorOf(m);
    const opts = {
      width: Math.max(200, body.clientWidth || 400),
      height: 180,
      legend: {show: false},
      cursor: {drag: {x: false, y: false}},
      scales: {x: {time: false}},
      axes: [
        // Steps are whole numbers: no ticks between them.
        {label: this.xLabel, labelSize: 18, size: 32, stroke: '#57606a', grid: {stroke: '#eaeef2'}, ticks: {stroke: '#d0d7de'},
          incrs: stepIncrements, values: (u, vals) => vals.map((v) => v.toLocaleString('en-US'))},
        {size: 60, stroke: '#57606a', grid: {stroke: '#eaeef2'}, ticks: {stroke: '#d0d7de'}, values: (u, vals) => vals.map(tickLabel)},
      ],
      series: [
        {label: this.xLabel},
        // The area is filled down to the bottom of the chart, also for
        // metrics below zero (uPlot fills to zero by default).
        {label: m, stroke: color, width: 2, fill: `${color}14`, fillTo: (u) => u.scales.y.min,
          points: {show: (u) => u.data[0].length <= 60, size: 6, fill: color}},
      ],
    };
    // uPlot is the vendored global (assets/vendor/uplot).
    const plot = new window.uPlot(opts, [[], []], body);
    return {plot, panel, body, value};
  }

  fit() {
    for (const c of this.plots.values()) {
      const w = c.body.clientWidth;
      if (w > 0 && Math.abs(w - c.plot.width) > 2) c.plot.setSize({width: w, height: 180});
    }
  }

  destroy() {
    this.resize.disconnect();
    for (const c of this.plots.values()) c.plot.destroy();
    this.plots.clear();
  }
}
