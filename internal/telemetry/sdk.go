package telemetry

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
)

// SDKHandler puts the Temporal SDK's own metrics (poll and task latencies,
// activity and workflow outcomes, sticky cache...) into Registry, under
// their SDK names prefixed "temporal_". Pass it as client.Options.MetricsHandler.
func SDKHandler() client.MetricsHandler { return &sdkHandler{vecs: sdkVecs} }

// sdkVecs holds one vector per SDK metric name, shared by every handler of
// the process: Prometheus allows one set of label names per metric, so the
// first use fixes them and later uses fill or drop labels to match.
var sdkVecs = &vecs{m: map[string]*vec{}}

type vecs struct {
	mu sync.Mutex
	m  map[string]*vec
}

type vec struct {
	labels    []string
	counter   *prometheus.CounterVec
	gauge     *prometheus.GaugeVec
	histogram *prometheus.HistogramVec
}

type kind int

const (
	counterKind kind = iota
	gaugeKind
	timerKind
)

// get returns the vector of name for tags, creating and registering it on
// first use.
func (v *vecs) get(name string, k kind, tags map[string]string) (*vec, prometheus.Labels) {
	v.mu.Lock()
	defer v.mu.Unlock()
	key := name + "/" + [...]string{"c", "g", "t"}[k]
	x, ok := v.m[key]
	if !ok {
		x = &vec{}
		for t := range tags {
			x.labels = append(x.labels, t)
		}
		sort.Strings(x.labels)
		full := "temporal_" + strings.ReplaceAll(name, ".", "_")
		help := "Temporal SDK metric " + name + "."
		var c prometheus.Collector
		switch k {
		case counterKind:
			x.counter = prometheus.NewCounterVec(prometheus.CounterOpts{Name: full + "_total", Help: help}, x.labels)
			c = x.counter
		case gaugeKind:
			x.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: full, Help: help}, x.labels)
			c = x.gauge
		default:
			x.histogram = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: full + "_seconds", Help: help,
				Buckets: requestBuckets}, x.labels)
			c = x.histogram
		}
		// A name the SDK also uses for another kind cannot register; that
		// metric stays out of the registry rather than fail the process.
		_ = Registry.Register(c)
		v.m[key] = x
	}
	labels := prometheus.Labels{}
	for _, l := range x.labels {
		labels[l] = tags[l]
	}
	return x, labels
}

// sdkHandler implements client.MetricsHandler over sdkVecs.
type sdkHandler struct {
	vecs *vecs
	tags map[string]string
}

func (h *sdkHandler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	for k, v := range h.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	return &sdkHandler{vecs: h.vecs, tags: merged}
}

func (h *sdkHandler) Counter(name string) client.MetricsCounter {
	v, l := h.vecs.get(name, counterKind, h.tags)
	c := v.counter.With(l)
	return counterFunc(func(d int64) { c.Add(float64(d)) })
}

func (h *sdkHandler) Gauge(name string) client.MetricsGauge {
	v, l := h.vecs.get(name, gaugeKind, h.tags)
	g := v.gauge.With(l)
	return gaugeFunc(g.Set)
}

func (h *sdkHandler) Timer(name string) client.MetricsTimer {
	v, l := h.vecs.get(name, timerKind, h.tags)
	o := v.histogram.With(l)
	return timerFunc(func(d time.Duration) { o.Observe(d.Seconds()) })
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }
