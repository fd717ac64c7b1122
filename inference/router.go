package inference

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/serving"
)

// Router defaults, used when the RouterConfig fields are zero.
const (
	// DefaultRefresh is how often the registry is read: it bounds how long a
	// process whose lease ran out is still picked, and how long a hung
	// process holds its streams after that.
	DefaultRefresh = time.Second
	// DefaultDialTimeout bounds connecting to a process. A live process on
	// the same network accepts in well under a millisecond; one that does
	// not is skipped for the next holder.
	DefaultDialTimeout = 2 * time.Second
	// DefaultMaxAnswerBytes bounds a non-streamed answer held in memory
	// before it is sent on.
	DefaultMaxAnswerBytes = 64 << 20
)

// RouterConfig configures a Router; the zero value is usable.
type RouterConfig struct {
	// BaseModels are the base model names the configuration knows. A name
	// the registry lists (live or not) is a base model too; anything else is
	// read as a trained model's name.
	BaseModels []string
	// Refresh is how often the registry is read (DefaultRefresh).
	Refresh time.Duration
	// DialTimeout bounds connecting to a process (DefaultDialTimeout).
	DialTimeout time.Duration
	// WriteTimeout bounds each write to the client; zero means none.
	WriteTimeout time.Duration
	// MaxAnswerBytes bounds a non-streamed answer (DefaultMaxAnswerBytes).
	MaxAnswerBytes int64
}

// Router sends chat completions to the inference processes of the registry.
// It is safe for concurrent use; Run keeps its view of the registry current.
type Router struct {
	cfg      RouterConfig
	registry trainyard.InferenceRegistry
	models   trainyard.ModelStore
	client   *http.Client
	log      *zap.Logger

	mu     sync.Mutex
	procs  []*trainyard.InferenceProcess // as of readAt
	readAt time.Time
	calls  map[*call]struct{}   // forwarded calls in flight
	local  map[string]int       // calls in flight per process, from this router
	down   map[string]time.Time // process → its heartbeat when a connection to it failed
	// affinity is the process the last request for an adapter (account
	// and model reference) went to: its next requests go there too while
	// that process has room, so an adapter's rollouts share its batches
	// and its cached weights.
	affinity map[string]string
}

// maxAffinity bounds the adapters remembered; past it the memory starts over.
const maxAffinity = 1 << 14

// call is one forwarded request in flight; cancel ends it with errLost.
type call struct {
	proc   string
	cancel context.CancelCauseFunc
}

// errLost cancels the calls of a process whose lease ran out.
var errLost = errors.New("the inference process stopped heartbeating")

// NewRouter builds a router over the registry and the model store (to find a
// trained model's base model).
func NewRouter(registry trainyard.InferenceRegistry, models trainyard.ModelStore, cfg RouterConfig, log *zap.Logger) *Router {
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.MaxAnswerBytes <= 0 {
		cfg.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if log == nil {
		log = zap.NewNop()
	}
	dialer := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy: nil, // processes are on the service's own network, never behind the environment's proxy
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, &dialError{err: err}
			}
			return c, nil
		},
		MaxIdleConnsPerHost: 256,
		// Shorter than the processes' own idle timeout (api.ConfigureHTTPServer,
		// 2 min): the router drops an idle connection first, so a request is
		// never written to one the process is closing.
		IdleConnTimeout:    90 * time.Second,
		DisableCompression: true, // bytes pass through as the process wrote them
	}
	return &Router{cfg: cfg, registry: registry, models: models, log: log,
		client: &http.Client{Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		calls: map[*call]struct{}{}, local: map[string]int{}, down: map[string]time.Time{}}
}

// dialError marks a failure to connect: the request never reached the
// process, so the next holder may take it.
type dialError struct{ err error }

func (e *dialError) Error() string { return "connect: " + e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// Run reads the registry every Refresh until ctx is done, and cancels the
// calls in flight to processes whose lease ran out or whose row is gone.
func (r *Router) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Refresh)
	defer t.Stop()
	for {
		if _, err := r.reload(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("read the inference registry", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check is the system-check probe: an error when no process takes work.
func (r *Router) Check(ctx context.Context) error {
	procs, err := r.processes(ctx)
	if err != nil {
		return err
	}
	for _, p := range procs {
		if p.Live && !p.Draining {
			return nil
		}
	}
	return trainyard.Errorf(trainyard.EUNAVAILABLE, "no live inference process is registered")
}

// processes returns the registry as last read, reading it again when that
// is more than two refreshes old (Run is not running, or failing).
func (r *Router) processes(ctx context.Context) ([]*trainyard.InferenceProcess, error) {
	r.mu.Lock()
	procs, fresh := r.procs, time.Since(r.readAt) < 2*r.cfg.Refresh
	r.mu.Unlock()
	if fresh {
		return procs, nil
	}
	return r.reload(ctx)
}

// reload reads the registry, keeps it and cancels the calls of processes no
// longer live. A process that is draining but live keeps its calls.
func (r *Router) reload(ctx context.Context) ([]*trainyard.InferenceProcess, error) {
	procs, err := r.registry.ListInference(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the inference registry: %w", err)
	}
	live := map[string]*trainyard.InferenceProcess{}
	for _, p := range procs {
		if p.Live {
			live[p.ID] = p
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.procs, r.readAt = procs, time.Now()
	for c := range r.calls {
		if live[c.proc] == nil {
			c.cancel(errLost)
		}
	}
	for id := range r.down {
		if live[id] == nil {
			delete(r.down, id)
		}
	}
	return procs, nil
}

// baseOf resolves the request's model to the base model that serves it: a
// base model name as is, a trained model (wandb-artifact:///E/P/N[:alias])
// by its row, read with the account's own models. The checkpoint itself is
// resolved by the process that serves it.
func (r *Router) baseOf(ctx context.Context, accountID, model string, procs []*trainyard.InferenceProcess) (string, error) {
	isBase := func(name string) bool {
		if slices.Contains(r.cfg.BaseModels, name) {
			return true
		}
		for _, p := range procs {
			if p.Holds(name) {
				return true
			}
		}
		return false
	}
	ref, err := serving.ParseModelRef(model, isBase)
	if err != nil {
		return "", err
	}
	if ref.Base != "" {
		return ref.Base, nil
	}
	m, err := r.models.FindModelByName(ctx, accountID, ref.Entity, ref.Project, ref.Name)
	if trainyard.ErrorCode(err) == trainyard.ENOTFOUND {
		return "", trainyard.WrapError(trainyard.ENOTFOUND, err, "The model `%s` does not exist.", model)
	}
	if err != nil {
		return "", fmt.Errorf("find model %s: %w", ref, err)
	}
	return m.BaseModel, nil
}

// pick orders the processes that may take a request on base: live, not
// draining, holding base and not refusing connections since their last
// heartbeat. The least loaded (in flight / capacity, as of its last
// heartbeat) comes first; on a tie the one this router has fewer calls in
// flight to (its heartbeat may predate a burst), then a random one, so API
// replicas do not herd onto the same process. A request for an adapter
// (affinity names it; "" for the base model alone) goes first to the
// process its adapter's last request went to, while that one has room.
func (r *Router) pick(procs []*trainyard.InferenceProcess, base, affinity string) []*trainyard.InferenceProcess {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*trainyard.InferenceProcess
	for _, p := range procs {
		if failed, ok := r.down[p.ID]; ok && !p.HeartbeatAt.After(failed) {
			continue
		}
		if p.Live && !p.Draining && p.Holds(base) {
			out = append(out, p)
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	local := func(p *trainyard.InferenceProcess) int { return r.local[p.ID] }
	sort.SliceStable(out, func(i, j int) bool {
		li, lj := load(out[i]), load(out[j])
		if li != lj {
			return li < lj
		}
		return local(out[i]) < local(out[j])
	})
	if id, ok := r.affinity[affinity]; ok && affinity != "" {
		for i, p := range out {
			if p.ID == id && p.InFlight < p.Capacity && local(p) < p.Capacity {
				copy(out[1:i+1], out[:i])
				out[0] = p
				break
			}
		}
	}
	return out
}

// remember records that the adapter's request went to proc.
func (r *Router) remember(affinity, proc string) {
	if affinity == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.affinity == nil || len(r.affinity) >= maxAffinity {
		r.affinity = map[string]string{}
	}
	r.affinity[affinity] = proc
}

func load(p *trainyard.InferenceProcess) float64 {
	return float64(p.InFlight) / float64(max(p.Capacity, 1))
}

// markDown skips p until its next heartbeat: it refused a connection.
func (r *Router) markDown(p *trainyard.InferenceProcess) {
	r.mu.Lock()
	r.down[p.ID] = p.HeartbeatAt
	r.mu.Unlock()
}

// track registers a call to proc; its context ends with the caller's or
// when the process is lost. done must be called once the call is over.
func (r *Router) track(ctx context.Context, proc string) (context.Context, func()) {
	cctx, cancel := context.WithCancelCause(ctx)
	c := &call{proc: proc, cancel: cancel}
	r.mu.Lock()
	r.calls[c] = struct{}{}
	r.local[proc]++
	r.mu.Unlock()
	return cctx, func() {
		r.mu.Lock()
		delete(r.calls, c)
		if r.local[proc]--; r.local[proc] <= 0 {
			delete(r.local, proc)
		}
		r.mu.Unlock()
		cancel(nil)
	}
}
