package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/engine/catalog"
	"github.com/trainyard/trainyard/storage/postgres"
	"github.com/trainyard/trainyard/storage/s3"
	"github.com/trainyard/trainyard/worker"
	"github.com/trainyard/trainyard/workflows"
)

// The test binary re-executes itself as a worker process when envRole says
// so; envWorkerConfig carries the worker's configuration as JSON.
const (
	envRole         = "TRAINYARD_E2E_ROLE"
	roleWorker      = "worker"
	envWorkerConfig = "TRAINYARD_E2E_WORKER_CONFIG"
)

// workerProcessConfig is what a worker process needs to join a test's stack.
type workerProcessConfig struct {
	TemporalAddr string
	Namespace    string
	TaskQueue    string
	DatabaseURL  string
	S3           s3.Config
	Activities   activities.Config
	// Registry: the worker announces itself in the database's worker
	// registry and finds other workers there.
	Registry bool
	// Bases are the base models it holds (name: snapshot directory);
	// empty: the built-in ones.
	Bases map[string]string
}

// runWorkerProcess is the main function of a worker process: it serves the
// test's task queue until it is killed or told to stop.
func runWorkerProcess() int {
	var cfg workerProcessConfig
	if err := json.Unmarshal([]byte(os.Getenv(envWorkerConfig)), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker process: bad config:", err)
		return 2
	}
	level := zap.WarnLevel
	if os.Getenv("TRAINYARD_E2E_WORKER_LOG") == "info" { // to follow a worker process while debugging a test
		level = zap.InfoLevel
	}
	log, _ := zap.NewDevelopment(zap.IncreaseLevel(level))
	if dir := os.Getenv("TRAINYARD_E2E_WORKER_PROFILE_DIR"); dir != "" {
		// A CPU profile of the process's first 20 s, to see where a worker's
		// time goes in a benchmark (the process is killed, not stopped).
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("worker-%d.pprof", os.Getpid())))
		if err == nil && pprof.StartCPUProfile(f) == nil {
			time.AfterFunc(20*time.Second, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	db, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		log.Error("open database", zap.Error(err))
		return 1
	}
	defer db.Close()
	blobs, err := s3.New(ctx, cfg.S3)
	if err != nil {
		log.Error("open S3", zap.Error(err))
		return 1
	}
	tc, err := client.Dial(client.Options{HostPort: cfg.TemporalAddr, Namespace: cfg.Namespace, Logger: worker.NewLogger(log)})
	if err != nil {
		log.Error("dial Temporal", zap.Error(err))
		return 1
	}
	defer tc.Close()
	wf := workflows.NewClient(tc, workflows.ClientOptions{TaskQueue: cfg.TaskQueue, Jobs: db, Events: db})
	deps := activities.Deps{Jobs: db, Events: db, Models: db, Blobs: blobs, Queue: db, Workflows: wf,
		Bases: catalog.New(cfg.Bases), Files: blobs, Logger: log}
	wcfg := worker.Config{TaskQueue: cfg.TaskQueue}
	for name := range cfg.Bases {
		wcfg.BaseModels = append(wcfg.BaseModels, name)
	}
	if cfg.Registry {
		deps.Workers, wcfg.Registry = db, db
	}
	acts, err := activities.New(deps, cfg.Activities)
	if err != nil {
		log.Error("activities", zap.Error(err))
		return 1
	}
	w, err := worker.New(tc, acts, wcfg, log)
	if err != nil {
		log.Error("worker", zap.Error(err))
		return 1
	}
	if err := w.Run(ctx); err != nil {
		log.Error("run worker", zap.Error(err))
		return 1
	}
	return 0
}

// workerProcess is a worker running as a separate process.
type workerProcess struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startWorkerProcess starts a worker process on the stack's task queue.
func (s *stack) startWorkerProcess() *workerProcess { return s.startWorkerProcessOn(-1, false) }

// startWorkerProcessOn starts a worker process; cpu ≥ 0 pins it to that
// CPU (taskset) with GOMAXPROCS=1. first runs it at a higher scheduling
// priority than the rest of the machine (nice −10; needs root), as if it had
// its CPU to itself while the test's Temporal server, S3 gateway and
// PostgreSQL run elsewhere.
func (s *stack) startWorkerProcessOn(cpu int, first bool) *workerProcess {
	s.t.Helper()
	st := s.temporal
	cfg, _ := json.Marshal(workerProcessConfig{
		TemporalAddr: st.FrontendAddr(), Namespace: st.Namespace(), TaskQueue: s.queue,
		DatabaseURL: s.dbURL, S3: s.s3cfg, Activities: s.opts.Activities, Registry: s.opts.Registry, Bases: s.opts.Bases,
	})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	env := append(os.Environ(), envRole+"="+roleWorker, envWorkerConfig+"="+string(cfg))
	if cpu >= 0 {
		args := []string{"taskset", "-c", strconv.Itoa(cpu), os.Args[0], "-test.run=^$"}
		if first {
			args = append([]string{"nice", "-n", "-10"}, args...)
		}
		cmd = exec.Command(args[0], args[1:]...)
		env = append(env, "GOMAXPROCS=1")
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	p := &workerProcess{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	s.t.Cleanup(func() { p.kill(s.t) })
	return p
}

// kill sends SIGKILL: the worker gets no chance to finish or hand over.
func (p *workerProcess) kill(t testing.TB) {
	_ = p.cmd.Process.Signal(syscall.SIGKILL) // fails harmlessly once it has exited
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("worker process %d did not exit after SIGKILL", p.cmd.Process.Pid)
	}
}
