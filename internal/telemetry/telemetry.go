// Package telemetry holds trainyard's Prometheus metrics: one registry per
// process, exposed in the text format at /metrics (the API's own route, and
// a listener of its own on each worker), with the Temporal SDK's metrics in
// the same registry (see SDKHandler). README.md lists the metrics with
// example queries.
package telemetry

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry is the process's metrics registry.
var Registry = prometheus.NewRegistry()

// Buckets of latency histograms, in seconds.
var (
	requestBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	stepBuckets    = []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	waitBuckets    = []float64{.1, .5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600}
)

// The metrics. Labels stay few and bounded, never a value a request chose:
// routes are route patterns (never paths with ids), methods and statuses go
// through Method and Status.
var (
	HTTPRequests = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trainyard_http_requests_total", Help: "API requests answered, by route pattern, method and status."},
		[]string{"route", "method", "status"}))
	HTTPDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "trainyard_http_request_duration_seconds", Help: "API request latency, by route pattern and method.",
		Buckets: requestBuckets}, []string{"route", "method"}))
	JobsEnded = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trainyard_jobs_ended_total", Help: "Training jobs that ended, by kind and final status."},
		[]string{"kind", "status"}))
	JobsSubmitted = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trainyard_jobs_submitted_total", Help: "Training jobs accepted by the API, by kind."}, []string{"kind"}))
	QueueWait = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "trainyard_job_queue_wait_seconds", Help: "Time from a job's submission to the start of its first step, by kind.",
		Buckets: waitBuckets}, []string{"kind"}))
	StepDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "trainyard_train_step_duration_seconds", Help: "Duration of one gradient step, by job kind.",
		Buckets: stepBuckets}, []string{"kind"}))
	TrainTokens = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trainyard_train_tokens_total", Help: "Tokens trained on (forward and backward), by job kind; rate() is tokens/s."},
		[]string{"kind"}))
	ShardDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "trainyard_train_shard_duration_seconds", Help: "Duration of one shard's gradient of a data-parallel step (one worker's part of it), by job kind.",
		Buckets: stepBuckets}, []string{"kind"}))
	ShardBytes = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trainyard_train_shard_bytes_total",
		Help: "Bytes exchanged through the object store by data-parallel steps, by what: gradient_written (a shard's gradient), gradient_read (the update summing them)."},
		[]string{"what"}))
	StateBytes = register(prometheus.NewCounter(prometheus.CounterOpts{
		Name: "trainyard_train_state_bytes_saved_total", Help: "Bytes of adapter and optimizer state stored by training."}))
	StateBytesLoaded = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trainyard_train_state_bytes_loaded_total",
		Help: "Bytes of adapter and optimizer state read back from the object store by training, by source: checkpoint (a job's start) or job_state (a chunk resumed on a worker without the job's state in memory)."},
		[]string{"source"}))
	StateCacheHits = register(prometheus.NewCounter(prometheus.CounterOpts{
		Name: "trainyard_train_state_cache_hits_total", Help: "Train chunks that continued from the state their worker kept in memory."}))
	StateCached = register(prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "trainyard_train_state_cached_jobs", Help: "Jobs whose training state this worker keeps in memory."}))
	ChatFirstToken = register(prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "trainyard_chat_time_to_first_token_seconds", Help: "Time from a chat request to its first token.",
		Buckets: requestBuckets}))
	ChatTokens = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trainyard_chat_tokens_total", Help: "Tokens of chat completions, by kind (prompt, completion)."}, []string{"kind"}))
	ChatPrefillSaved = register(prometheus.NewCounter(prometheus.CounterOpts{
		Name: "trainyard_chat_prefill_tokens_saved_total", Help: "Prompt tokens of chat requests not prefilled because another request with the same prompt and adapter had been (shared prefixes)."}))
	ChatRejected = register(prometheus.NewCounter(prometheus.CounterOpts{
		Name: "trainyard_chat_rejected_total", Help: "Chat requests refused by the admission queue (429: queue full or waited too long)."}))
	ChatQueued = register(prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "trainyard_chat_queued", Help: "Chat requests waiting in the admission queue for room in the decoding batch."}))
	ChatQueueWait = register(prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "trainyard_chat_queue_wait_seconds", Help: "Time a chat request waited for room in the decoding batch.",
		Buckets: requestBuckets}))
	ChatRouted = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trainyard_chat_routed_total", Help: "Chat requests the API sent to inference processes, by outcome (forwarded, connect_failed, no_process, lost)."},
		[]string{"outcome"}))
	AdapterCache = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "trainyard_adapter_cache_requests_total", Help: "Adapter lookups of chat serving, by result (hit, miss)."},
		[]string{"result"}))
)

func init() {
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

func register[C prometheus.Collector](c C) C {
	Registry.MustRegister(c)
	return c
}

// Method is the method label of a request: one of the standard methods, or
// "other". The method is the client's to choose (any token is valid HTTP),
// so taking it raw would let anyone without a key add series without end.
func Method(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return m
	}
	return "other"
}

// Status is the status label: a code the server wrote, 100–599, else "other"
// (a handler cannot be trusted more than the label set needs).
func Status(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}

// Handler serves the registry in the Prometheus text format.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{Registry: Registry})
}
