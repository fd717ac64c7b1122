package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/client"
	"gopkg.in/yaml.v3"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/enginetest"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/internal/testutil/s3test"
	"github.com/trainyard/trainyard/storage/postgres"
	"github.com/trainyard/trainyard/workflows"
)

// process is one trainyard command run as an OS process of its own (this
// test binary, see TestMain), with its output kept for the test.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

// startProcess runs `trainyard <command>` with exactly env (plus PATH and
// HOME): what the process knows comes from these variables alone.
func startProcess(t testing.TB, name, command string, env map[string]string) *process {
	t.Helper()
	p := &process{name: name, out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0])
	p.cmd.Env = []string{envRunMain + "=" + command, "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, tail(p.out.String(), 4000))
		}
	})
	return p
}

// await waits for re in the process's output and returns its first group.
func (p *process) await(t testing.TB, re *regexp.Regexp) string {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(p.out.String()); m != nil {
			return m[1]
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited:\n%s", p.name, tail(p.out.String(), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s after 3 minutes:\n%s", p.name, re, tail(p.out.String(), 4000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// composeEnv returns the environment variables docker-compose.yml gives the
// service (the shared anchor merged in).
func composeEnv(t *testing.T, service string) []string {
	t.Helper()
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Environment map[string]any `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range doc.Services[service].Environment {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// TestProductionTopology runs trainyard as docker-compose.yml lays it out,
// every part an OS process of its own configured only by environment
// variables: a Temporal server on PostgreSQL persistence, an S3 server,
// `trainyard api`, `trainyard worker`s and two `trainyard infer`s holding
// different base models. It trains four jobs on three
// models; SIGTERMs the only worker in the middle of a Train step and checks
// that the job's state was stored at its last recorded step; then, with two
// workers, SIGKILLs the one running a Train step and checks that the
// other worker finishes it, that no job's events have a gap or a duplicate,
// and that the two jobs of one model never trained at once. The variables
// given to api, worker and infer are exactly those docker-compose.yml sets
// for them (TRAINYARD_BASE_MODELS aside, which differs per infer process),
// so the two cannot drift apart. Meanwhile its "inference" subtest
// (checkInference) chats through the API.
func TestProductionTopology(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five processes")
	}
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	admin, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	temporalDB := "temporal_topology_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	tdb := *admin
	tdb.Path, tdb.RawQuery = "/"+temporalDB, ""
	t.Cleanup(func() { dropDatabases(t, admin, temporalDB, temporalDB+"_visibility") })

	temporal := startProcess(t, "temporal", "temporal", map[string]string{
		envTemporalDatabaseURL: tdb.String(), "TRAINYARD_TEMPORAL_FRONTEND_ADDR": "127.0.0.1:0",
		"TRAINYARD_TEMPORAL_UI_ADDR": "off", "TEMPORAL_NAMESPACE": "default", "TRAINYARD_LOG_LEVEL": "error"})
	frontend := temporal.await(t, regexp.MustCompile(`Temporal frontend (\S+)`))
	s3cfg := s3test.Config(t)

	queue := "topology-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	values := map[string]string{
		"DATABASE_URL": dbURL, "TEMPORAL_ADDRESS": frontend, "TEMPORAL_NAMESPACE": "default", "TRAINYARD_TASK_QUEUE": queue,
		"S3_ENDPOINT": s3cfg.Endpoint, "S3_BUCKET": s3cfg.Bucket, "S3_USE_PATH_STYLE": "true",
		"AWS_ACCESS_KEY_ID": s3cfg.AccessKeyID, "AWS_SECRET_ACCESS_KEY": s3cfg.SecretAccessKey, "AWS_REGION": s3cfg.Region,
		"TRAINYARD_LOG_LEVEL": "info", "TRAINYARD_HTTP_ADDR": "127.0.0.1:0", "TRAINYARD_MAX_BODY_BYTES": "67108864",
		"TRAINYARD_CHAT_CONCURRENCY": "8", "TRAINYARD_MAX_REQUESTS_PER_KEY": "128", "TRAINYARD_HTTP_BODY_TIMEOUT": "1m",
		"TRAINYARD_HTTP_WRITE_TIMEOUT": "1m", "TRAINYARD_S3_READ_BUCKETS": "", "TRAINYARD_TRAINING_CONCURRENCY": "1",
		"TRAINYARD_FETCH_CONCURRENCY": "4", "TRAINYARD_DOWNLOAD_TIMEOUT": "5m", "TRAINYARD_METRICS_ADDR": "127.0.0.1:0",
		"TRAINYARD_INFERENCE": "remote", "TRAINYARD_BASE_MODELS": "", "TRAINYARD_ADAPTER_CACHE_BYTES": "268435456",
		"TRAINYARD_INFER_HEARTBEAT": "500ms", // a lease of 1.5 s: the hung-process checks stay short
		"TRAINYARD_TEMPORAL_UI_URL": "http://localhost:8233",
	}
	envOf := func(service string) map[string]string {
		env := map[string]string{}
		for _, name := range composeEnv(t, service) {
			v, ok := values[name]
			if !ok {
				t.Fatalf("docker-compose.yml sets %s for %s, which this test does not know: keep them in step", name, service)
			}
			env[name] = v
		}
		return env
	}
	api := startProcess(t, "api", "api", envOf("api"))
	base := api.await(t, regexp.MustCompile(`"msg":"API listening","url":"([^"]+)"`))
	metricsURLs := map[*process]string{}
	startWorker := func(name string) *process {
		w := startProcess(t, name, "worker", envOf("worker"))
		metricsURLs[w] = w.await(t, regexp.MustCompile(`"msg":"metrics listening","url":"([^"]+)"`))
		w.await(t, regexp.MustCompile(`"msg":"(worker polling)"`))
		return w
	}
	// One worker at first, so that what it stored when it stops is all
	// there is to see.
	lone := startWorker("worker 1")
	inferA := startInfer(t, "infer A", envOf("infer"), "trainyard/tiny-chat")
	inferB := startInfer(t, "infer B", envOf("infer"), testLlama+"="+enginetest.WriteLlamaDir(t, enginetest.SmallLlama, 7))

	db, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	acct, err := db.CreateAccount(ctx, "topology")
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := db.CreateAPIKey(ctx, acct.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	// Chat runs on the infer processes while the workers train.
	inference := make(chan struct{})
	defer func() { <-inference }()
	go func() {
		defer close(inference)
		t.Run("inference", func(t *testing.T) {
			checkInference(t, inferenceCase{api: base, key: key, db: db, acct: acct, a: inferA, b: inferB})
		})
	}()

	var data strings.Builder
	for i := range 20 {
		fmt.Fprintf(&data, `{"messages":[{"role":"user","content":"%d+%d"},{"role":"assistant","content":"%d"}]}`+"\n", i, i, 2*i)
	}
	code, up := call(t, "POST", base+"/v1/preview/files?project=p&name=sums", key, data.String())
	if code != 200 {
		t.Fatalf("upload: %d %v", code, up)
	}
	submit := func(model string, epochs int) string {
		code, m := call(t, "POST", base+"/v1/preview/sft-training-jobs", key, fmt.Sprintf(
			`{"model_id": %q, "training_data_url": %q, "config": {"batch_size": 1, "learning_rate": 1e-3}, "experimental_config": {"num_epochs": %d}}`,
			model, up["url"], epochs))
		if code != 200 {
			t.Fatalf("submit: %d %v", code, m)
		}
		return m["id"].(string)
	}
	var models, jobs []string
	for i := range 3 {
		code, m := call(t, "POST", base+"/v1/preview/models", key, fmt.Sprintf(`{"project":"p","name":"m%d","base_model":"trainyard/tiny-chat"}`, i))
		if code != 200 {
			t.Fatalf("model: %d %v", code, m)
		}
		models = append(models, m["id"].(string))
	}
	jobs = append(jobs, submit(models[0], 30), submit(models[0], 5), submit(models[1], 10), submit(models[2], 10))
	tc, err := client.Dial(client.Options{HostPort: frontend, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()

	// SIGTERM to the worker in the middle of a Train step: it finishes the
	// step, stores the job's state at exactly its last recorded step and
	// exits, so the next worker recomputes nothing.
	trainingWorker(t, tc, base, key, jobs[0], []*process{lone})
	if err := syscall.Kill(lone.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lone.done:
	case <-time.After(time.Minute):
		t.Fatal("worker 1 still runs a minute after SIGTERM")
	}
	if code := lone.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("worker 1 exited with %d after SIGTERM", code)
	}
	stored, err := db.GetJob(ctx, jobs[0])
	if err != nil {
		t.Fatal(err)
	}
	if steps := len(allEvents(t, db, jobs[0])) - 1; stored.SavedStep != steps || steps < 3 {
		t.Fatalf("after SIGTERM to its worker, the job's state is stored at step %d with %d steps recorded", stored.SavedStep, steps)
	}
	t.Logf("SIGTERM to the worker: the job's state was stored at step %d, its last recorded step", stored.SavedStep)

	// Two workers from now on. Kill the one running the first job's Train
	// step, mid-step.
	workers := []*process{startWorker("worker 2"), startWorker("worker 3")}
	victim, atStep := trainingWorker(t, tc, base, key, jobs[0], workers)
	killed := time.Now()
	if err := syscall.Kill(-victim.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The other worker takes the step over once the heartbeat times out.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		_, job := call(t, "GET", base+"/v1/preview/training-jobs/"+jobs[0], key, "")
		if job["current_step"].(float64) > atStep || job["status"] == "COMPLETED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress 2 minutes after the worker was killed: %v", job)
		}
	}
	t.Logf("failover: the job progressed again %v after its worker was killed at step %v", time.Since(killed).Round(100*time.Millisecond), atStep)

	for _, id := range jobs {
		for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
			_, job := call(t, "GET", base+"/v1/preview/training-jobs/"+id, key, "")
			if job["status"] == "COMPLETED" {
				break
			}
			if trainyard.JobStatus(job["status"].(string)).Terminal() || time.Now().After(deadline) {
				t.Fatalf("job %s = %v", id, job)
			}
		}
		evs := allEvents(t, db, id)
		for i, e := range evs {
			if e.Seq != i+1 {
				t.Fatalf("job %s: event %d has seq %d: a gap or a duplicate", id, i, e.Seq)
			}
		}
		if last := evs[len(evs)-1]; last.Type != trainyard.EventTrainingEnded {
			t.Fatalf("job %s ends with %s", id, last.Type)
		}
	}
	// The surviving worker's metrics show its training and the SDK's own.
	var scraped strings.Builder
	for _, w := range workers {
		if w == victim {
			continue
		}
		u := metricsURLs[w]
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		scraped.Write(b)
	}
	for _, want := range []string{"trainyard_train_step_duration_seconds_count", "trainyard_jobs_ended_total", "trainyard_train_tokens_total",
		"trainyard_train_state_bytes_saved_total", "temporal_"} {
		if !strings.Contains(scraped.String(), want) {
			t.Errorf("the worker's /metrics lacks %s", want)
		}
	}
	// One model, one step at a time: the second job's first step came after
	// the first job had ended.
	first, second := allEvents(t, db, jobs[0]), allEvents(t, db, jobs[1])
	if end, start := first[len(first)-1].CreatedAt, second[1].CreatedAt; !start.After(end) {
		t.Fatalf("the second job on model %s trained at %v, before the first ended at %v", models[0], start, end)
	}
	if ckpts := checkpointStepsOf(t, base, key, models[0]); !slices.Equal(ckpts, []int{1, 2}) {
		t.Fatalf("model %s checkpoints %v", models[0], ckpts)
	}
}

// trainingWorker waits until the job's Train activity runs and returns the
// worker process running it (from the activity's worker identity, whose
// default starts with the process id) and the job's step then.
func trainingWorker(t *testing.T, tc client.Client, base, key, jobID string, workers []*process) (*process, float64) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		d, err := tc.DescribeWorkflowExecution(context.Background(), workflows.WorkflowID(jobID), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, pa := range d.GetPendingActivities() {
			if pa.GetActivityType().GetName() != "Train" || pa.GetLastWorkerIdentity() == "" {
				continue
			}
			pid, _ := strconv.Atoi(strings.SplitN(pa.GetLastWorkerIdentity(), "@", 2)[0])
			for _, w := range workers {
				if w.cmd.Process.Pid == pid {
					_, job := call(t, "GET", base+"/v1/preview/training-jobs/"+jobID, key, "")
					if step := job["current_step"].(float64); step >= 3 {
						return w, step
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the job's Train activity did not start on either worker")
		}
	}
}

// checkpointStepsOf lists a model's checkpoint steps through the API.
func checkpointStepsOf(t *testing.T, base, key, model string) []int {
	t.Helper()
	_, page := call(t, "GET", base+"/v1/preview/models/"+model+"/checkpoints?limit=100", key, "")
	var steps []int
	js, _ := json.Marshal(page["data"])
	var items []struct{ Step int }
	_ = json.Unmarshal(js, &items)
	for _, it := range items {
		steps = append(steps, it.Step)
	}
	return steps
}

// dropDatabases removes the Temporal databases a test created.
func dropDatabases(t *testing.T, admin *url.URL, names ...string) {
	u := *admin
	u.Path, u.RawQuery = "/postgres", ""
	conn, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Logf("drop databases: %v", err)
		return
	}
	defer conn.Close(context.Background())
	for _, n := range names {
		if _, err := conn.Exec(context.Background(), `DROP DATABASE IF EXISTS "`+n+`" WITH (FORCE)`); err != nil {
			t.Logf("drop database %s: %v", n, err)
		}
	}
}
