package main

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/internal/testutil/enginetest"
	"github.com/trainyard/trainyard/internal/testutil/pgtest"
	"github.com/trainyard/trainyard/internal/testutil/s3test"
	"github.com/trainyard/trainyard/storage/postgres"
)

// chunkLine matches a worker's log line for one Train chunk of a job:
// where it resumed, where it ended, and the state bytes it read back.
func chunkLine(jobID string) *regexp.Regexp {
	return regexp.MustCompile(`"msg":"train chunk done","job_id":"` + jobID + `","from":(\d+),"done":(\d+).*?"state_bytes_loaded":(\d+)`)
}

// chunk is one Train chunk as a worker logged it.
type chunk struct{ from, done, loaded int }

// chunksOf lists the job's Train chunks in a worker's output.
func chunksOf(p *process, jobID string) []chunk {
	var out []chunk
	for _, m := range chunkLine(jobID).FindAllStringSubmatch(p.out.String(), -1) {
		from, _ := strconv.Atoi(m[1])
		done, _ := strconv.Atoi(m[2])
		loaded, _ := strconv.Atoi(m[3])
		out = append(out, chunk{from, done, loaded})
	}
	return out
}

// TestRoutingTopology runs the scale-out layout as separate processes —
// Temporal on PostgreSQL, an S3 server, `trainyard api` (remote
// inference), worker A holding trainyard/tiny-chat, worker B holding
// tiny-chat and a random-weight Llama directory, and one `trainyard infer`
// holding tiny-chat — and checks that a job goes to a worker holding its
// base model, that consecutive Train chunks of a job stay on one worker
// (reading no state back), that when that worker is SIGKILLed the other
// holder takes the job over from the stored state, that a job on a base
// model no worker holds stays QUEUED with a last_error saying so, and that
// chat for a base model no inference process holds is a 503.
func TestRoutingTopology(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six processes")
	}
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	admin, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	temporalDB := "temporal_routing_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	tdb := *admin
	tdb.Path, tdb.RawQuery = "/"+temporalDB, ""
	t.Cleanup(func() { dropDatabases(t, admin, temporalDB, temporalDB+"_visibility") })
	temporal := startProcess(t, "temporal", "temporal", map[string]string{
		envTemporalDatabaseURL: tdb.String(), "TRAINYARD_TEMPORAL_FRONTEND_ADDR": "127.0.0.1:0",
		"TRAINYARD_TEMPORAL_UI_ADDR": "off", "TEMPORAL_NAMESPACE": "default", "TRAINYARD_LOG_LEVEL": "error"})
	frontend := temporal.await(t, regexp.MustCompile(`Temporal frontend (\S+)`))
	s3cfg := s3test.Config(t)
	llamaDir := enginetest.WriteLlamaDir(t, enginetest.SmallLlama, 7)

	env := func(extra ...string) map[string]string {
		e := map[string]string{
			"DATABASE_URL": dbURL, "TEMPORAL_ADDRESS": frontend, "TEMPORAL_NAMESPACE": "default",
			"TRAINYARD_TASK_QUEUE": "routing",
			"S3_ENDPOINT":          s3cfg.Endpoint, "S3_BUCKET": s3cfg.Bucket, "S3_USE_PATH_STYLE": "true",
			"AWS_ACCESS_KEY_ID": s3cfg.AccessKeyID, "AWS_SECRET_ACCESS_KEY": s3cfg.SecretAccessKey, "AWS_REGION": s3cfg.Region,
			"TRAINYARD_LOG_LEVEL": "info", "TRAINYARD_HTTP_ADDR": "127.0.0.1:0", "TRAINYARD_METRICS_ADDR": "off",
			"TRAINYARD_INFERENCE": "remote", "TRAINYARD_INFER_HEARTBEAT": "500ms",
			// A killed worker's chunk moves after 3 s without a heartbeat;
			// 1 s chunks give a short job several.
			"TRAINYARD_HEARTBEAT_TIMEOUT": "3s", "TRAINYARD_TRAIN_CHUNK": "1s",
		}
		for i := 0; i+1 < len(extra); i += 2 {
			e[extra[i]] = extra[i+1]
		}
		return e
	}
	api := startProcess(t, "api", "api", env())
	base := api.await(t, regexp.MustCompile(`"msg":"API listening","url":"([^"]+)"`))
	startWorker := func(name, models string) *process {
		w := startProcess(t, name, "worker", env("TRAINYARD_BASE_MODELS", models))
		w.await(t, regexp.MustCompile(`"msg":"(worker polling)"`))
		return w
	}
	workerA := startWorker("worker A", "trainyard/tiny-chat")
	infer := startInfer(t, "infer", env(), "trainyard/tiny-chat")

	db, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	acct, err := db.CreateAccount(ctx, "routing")
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := db.CreateAPIKey(ctx, acct.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	var data strings.Builder
	for i := range 20 {
		fmt.Fprintf(&data, `{"messages":[{"role":"user","content":"%d+%d"},{"role":"assistant","content":"%d"}]}`+"\n", i, i, 2*i)
	}
	code, up := call(t, "POST", base+"/v1/preview/files?project=p&name=sums", key, data.String())
	if code != 200 {
		t.Fatalf("upload: %d %v", code, up)
	}
	model := func(name, baseModel string) string {
		m := &trainyard.Model{AccountID: acct.ID, Entity: acct.Entity, Project: "p", Name: name, BaseModel: baseModel}
		if err := db.CreateModel(ctx, m); err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	submit := func(modelID string, epochs int) string {
		code, m := call(t, "POST", base+"/v1/preview/sft-training-jobs", key, fmt.Sprintf(
			`{"model_id": %q, "training_data_url": %q, "config": {"batch_size": 1, "learning_rate": 1e-3}, "experimental_config": {"num_epochs": %d}}`,
			modelID, up["url"], epochs))
		if code != 200 {
			t.Fatalf("submit: %d %v", code, m)
		}
		return m["id"].(string)
	}
	job := func(id string) map[string]any {
		_, j := call(t, "GET", base+"/v1/preview/training-jobs/"+id, key, "")
		return j
	}

	// A long job on tiny-chat while worker A is the only worker: A
	// prepares it, and its chunks should stay there.
	long := submit(model("tiny", "trainyard/tiny-chat"), 50)
	// Its first chunk on A places it there; had B joined before that, the
	// job could as well have been placed on B.
	for deadline := time.Now().Add(time.Minute); len(chunksOf(workerA, long)) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the long job logged no chunk on worker A: %v", job(long))
		}
	}
	// Worker B joins, holding the Llama too; a job on the Llama can only
	// run there, and one on a base model no worker holds waits.
	workerB := startWorker("worker B", "trainyard/tiny-chat,"+testLlama+"="+llamaDir)
	onLlama := submit(model("llama", testLlama), 1)
	orphan := submit(model("orphan", "test/nobody"), 1)

	waitDone := func(id string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			j := job(id)
			if j["status"] == "COMPLETED" {
				return
			}
			if trainyard.JobStatus(fmt.Sprint(j["status"])).Terminal() || time.Now().After(deadline) {
				t.Fatalf("job %s = %v", id, j)
			}
		}
	}
	waitDone(onLlama)
	if len(chunksOf(workerB, onLlama)) == 0 || len(chunksOf(workerA, onLlama)) != 0 {
		t.Fatalf("the Llama job trained on A %d times, on B %d times; want B only", len(chunksOf(workerA, onLlama)), len(chunksOf(workerB, onLlama)))
	}

	// The long job's chunks ran on A alone, each after the first
	// continuing from memory.
	var onA []chunk
	for deadline := time.Now().Add(time.Minute); len(onA) < 3; time.Sleep(100 * time.Millisecond) {
		if onA = chunksOf(workerA, long); time.Now().After(deadline) {
			t.Fatalf("the long job logged %d chunks on worker A", len(onA))
		}
	}
	if got := chunksOf(workerB, long); len(got) != 0 {
		t.Fatalf("the long job's chunks moved to worker B while A ran: %v", got)
	}
	for i, c := range onA[1:] {
		if c.loaded != 0 || c.from != onA[i].done {
			t.Fatalf("chunk %d on A: %+v after %+v; want it to continue from memory", i+1, c, onA[i])
		}
	}
	t.Logf("locality: %d chunks of the long job on worker A, steps %d→%d, state bytes read back after the first: 0",
		len(onA), onA[0].from, onA[len(onA)-1].done)

	// SIGKILL A mid-job: B takes the job over from the stored state.
	killed := time.Now()
	if err := syscall.Kill(-workerA.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// How far A got, read once it is dead (read before, a chunk could end
	// and store a later state in between): the last gradient_step event,
	// recorded before each step's state is stored, has seq step+1.
	last, err := db.LastEvent(ctx, long)
	if err != nil || last.Type != trainyard.EventGradientStep {
		t.Fatalf("the long job's last event: %+v, %v", last, err)
	}
	atStep := last.Seq - 1
	var onB []chunk
	for deadline := time.Now().Add(time.Minute); len(onB) == 0; time.Sleep(50 * time.Millisecond) {
		if onB = chunksOf(workerB, long); time.Now().After(deadline) {
			t.Fatalf("worker B did not take the long job over: %v", job(long))
		}
	}
	lag := time.Since(killed)
	if testing.Verbose() {
		for _, l := range strings.Split(workerB.out.String(), "\n") {
			if strings.Contains(l, long) || strings.Contains(l, `"level":"warn"`) || strings.Contains(l, `"level":"error"`) {
				t.Log(tail(l, 600))
			}
		}
	}
	if onB[0].loaded == 0 || onB[0].from > atStep {
		t.Fatalf("B's first chunk of the long job %+v: want it to resume from stored state at or before step %v", onB[0], atStep)
	}
	t.Logf("failover: worker B logged its first chunk of the long job %v after A was killed at step %v; it read %d bytes of state back (from step %d)",
		lag.Round(100*time.Millisecond), atStep, onB[0].loaded, onB[0].from)

	// The job on a base model nobody holds is QUEUED, saying why.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		j := job(orphan)
		le, _ := j["last_error"].(map[string]any)
		if j["status"] == "QUEUED" && le != nil && strings.Contains(fmt.Sprint(le["message"]), `no running worker holds the base model "test/nobody"`) {
			break
		}
		if j["status"] != "QUEUED" || time.Now().After(deadline) {
			t.Fatalf("job on a base model no worker holds: %v", j)
		}
	}

	// Chat: tiny-chat through the API from the infer process; the model
	// trained on the Llama, which no inference process holds, is a 503.
	if resp, body := post(t, base, key, chatBody("trainyard/tiny-chat", `, "max_tokens": 2`), "routing-chat"); resp.StatusCode != 200 {
		t.Fatalf("chat on tiny-chat: %d %s", resp.StatusCode, body)
	}
	// The process logs a request once it has answered it.
	for deadline := time.Now().Add(5 * time.Second); !infer.served("routing-chat"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the chat on tiny-chat was answered, but not by the infer process")
		}
	}
	if resp, body := post(t, base, key, chatBody("wandb-artifact:///routing/p/llama", `, "max_tokens": 2`), "routing-503"); resp.StatusCode != 503 {
		t.Fatalf("chat on a base model no inference process holds: %d %s", resp.StatusCode, body)
	}

	// The long job goes on on B; cancel it rather than wait for its end.
	if code, m := call(t, "POST", base+"/v1/preview/training-jobs/"+long+"/cancel", key, ""); code != 200 {
		t.Fatalf("cancel: %d %v", code, m)
	}
}
