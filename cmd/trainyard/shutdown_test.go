package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/storage/postgres"
)

// envRunMain makes the test binary run trainyard's main with the arguments
// it holds, so tests can start `serve` as a process of its own and signal
// it as a terminal or a supervisor would.
const envRunMain = "TRAINYARD_TEST_RUN_MAIN"

// servedProcess is `trainyard serve` running as a child process in a
// process group of its own.
type servedProcess struct {
	cmd      *exec.Cmd
	out      *lockedBuffer
	api, key string
	exited   chan struct{} // closed when the process has exited, with waitErr set
	waitErr  error
}

// startServeProcess runs `trainyard serve` (this test binary, see TestMain)
// with env added to the test's environment and waits for its banner.
func startServeProcess(t testing.TB, env ...string) *servedProcess {
	t.Helper()
	p := &servedProcess{out: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0])
	p.cmd.Env = append(append(os.Environ(), envRunMain+"=serve"), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the group gets the signals, not the test
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	})
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(p.out.String(), "Press Ctrl+C"); time.Sleep(50 * time.Millisecond) {
		select {
		case <-p.exited:
			t.Fatalf("serve exited before its banner: %v\n%s", p.waitErr, p.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner after 3 minutes:\n%s", p.out)
		}
	}
	for _, m := range bannerLine.FindAllStringSubmatch(p.out.String(), -1) {
		switch m[1] {
		case "API":
			p.api = m[2]
		case "API key":
			p.key = m[2]
		}
	}
	return p
}

// signalGroup sends sig to the whole process group, as Ctrl+C in a terminal
// does, and waits for serve to exit.
func (p *servedProcess) signalGroup(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Fatalf("serve after %v: %v\n%s", sig, p.waitErr, p.out)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve still runs 2 minutes after %v", sig)
	}
}

// TestSignalledProcessGroupSavesTheJob is issue 12's clean shutdown: Ctrl+C
// (SIGINT to make run's process group) used to stop the embedded S3 child
// first, so the worker could not store the job's state and 19 to 31 steps
// were recomputed after a restart. Now the child is outside the group and
// stopped last: after SIGINT, and after SIGTERM to the group, the job's
// stored state is at exactly its last recorded step, and the job finishes
// after a restart with one gap-free sequence of events.
func TestSignalledProcessGroupSavesTheJob(t *testing.T) {
	dbURL := pgtest.URL(t)
	env := []string{"DATABASE_URL=" + dbURL, "TRAINYARD_DATA_DIR=" + t.TempDir(), "TRAINYARD_HTTP_ADDR=127.0.0.1:0",
		"TRAINYARD_TEMPORAL_FRONTEND_ADDR=127.0.0.1:0", "TRAINYARD_TEMPORAL_UI_ADDR=off", "TRAINYARD_DEV_API_KEY=",
		"TEMPORAL_ADDRESS=", "S3_ENDPOINT=", "TRAINYARD_S3_ENDPOINT="}
	db, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	p := startServeProcess(t, env...)
	code, model := call(t, "POST", p.api+"/v1/preview/models", p.key, `{"project":"p","name":"signals","base_model":"trainyard/tiny-chat"}`)
	if code != 200 {
		t.Fatalf("create model: %d %v", code, model)
	}
	var data strings.Builder
	for i := range 16 {
		fmt.Fprintf(&data, `{"messages":[{"role":"user","content":"%d+%d"},{"role":"assistant","content":"%d"}]}`+"\n", i, i, 2*i)
	}
	code, up := call(t, "POST", p.api+"/v1/preview/files?project=p&name=sums", p.key, data.String())
	if code != 200 {
		t.Fatalf("upload: %d %v", code, up)
	}
	code, job := call(t, "POST", p.api+"/v1/preview/sft-training-jobs", p.key, fmt.Sprintf(
		`{"model_id": %q, "training_data_url": %q, "config": {"batch_size": 1, "learning_rate": 1e-3}, "experimental_config": {"num_epochs": 40}}`,
		model["id"], up["url"]))
	if code != 200 {
		t.Fatalf("submit: %d %v", code, job)
	}
	id := job["id"].(string)

	last := 0
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		waitSteps(t, p, id, last+20)
		p.signalGroup(t, sig)
		stored, err := db.GetJob(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		steps := len(allEvents(t, db, id)) - 1 // after training_started
		if stored.SavedStep != steps || stored.CurrentStep != steps {
			t.Fatalf("after %v: state stored at step %d, current step %d, %d steps recorded\n%s", sig, stored.SavedStep, stored.CurrentStep, steps, p.out)
		}
		t.Logf("after %v the job's state was stored at step %d, its last recorded step", sig, steps)
		last = steps
		p = startServeProcess(t, env...)
	}
	done := waitSteps(t, p, id, -1)
	if done["status"] != "COMPLETED" || done["current_step"] != float64(640) || len(allEvents(t, db, id)) != 642 {
		t.Fatalf("job after two restarts = %v", done)
	}
	for i, e := range allEvents(t, db, id) {
		if e.Seq != i+1 {
			t.Fatalf("event %d has seq %d: a gap or a duplicate", i, e.Seq)
		}
	}
}

// allEvents reads every event of a job, page by page.
func allEvents(t *testing.T, db *postgres.DB, jobID string) []*trainyard.Event {
	t.Helper()
	var out []*trainyard.Event
	opts := trainyard.ListOptions{Limit: trainyard.MaxPageLimit}
	for {
		page, err := db.ListEvents(context.Background(), jobID, opts)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Items...)
		if !page.HasMore {
			return out
		}
		opts.After = page.Items[len(page.Items)-1].ID
	}
}

// waitSteps polls the job until it has at least n steps (n < 0: until it is
// finished) and returns it.
func waitSteps(t *testing.T, p *servedProcess, jobID string, n int) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		code, job := call(t, "GET", p.api+"/v1/preview/training-jobs/"+jobID, p.key, "")
		if code != 200 {
			t.Fatalf("job: %d %v", code, job)
		}
		finished := job["status"] == "COMPLETED" || job["status"] == "FAILED" || job["status"] == "CANCELLED"
		if finished || (n >= 0 && job["current_step"].(float64) >= float64(n)) {
			if n >= 0 && finished {
				t.Fatalf("the job finished before it reached step %d: %v", n, job)
			}
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job after 3 minutes: %v", job)
		}
	}
}
