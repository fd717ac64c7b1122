package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/storage/postgres"
)

// testLlama is the second base model of the topology: a random-weight Llama
// directory (enginetest.SmallLlama) that only infer B holds.
const testLlama = "test/llama"

// inferProcess is a `trainyard infer` process of a test: its own URL and
// its registry id, from its start-up log line.
type inferProcess struct {
	*process
	url, id string
}

// startInfer runs `trainyard infer` holding the base models given as
// TRAINYARD_BASE_MODELS (NAME or NAME=DIR), with env from docker-compose.yml.
func startInfer(t testing.TB, name string, env map[string]string, baseModels string) *inferProcess {
	t.Helper()
	env["TRAINYARD_BASE_MODELS"] = baseModels
	p := &inferProcess{process: startProcess(t, name, "infer", env)}
	p.id = p.await(t, regexp.MustCompile(`"msg":"inference serving","process":"([^"]+)"`))
	p.url = p.await(t, regexp.MustCompile(`"msg":"inference serving".*"url":"([^"]+)"`))
	return p
}

// served reports whether the process logged a request with this id.
func (p *inferProcess) served(id string) bool {
	return strings.Contains(p.out.String(), `"request_id":"`+id+`"`)
}

// inferenceCase is what the inference subtest of TestProductionTopology
// works with: the API (chat forwarded, TRAINYARD_INFERENCE=remote), infer A
// holding trainyard/tiny-chat and infer B holding testLlama.
type inferenceCase struct {
	api, key string
	db       *postgres.DB
	acct     *trainyard.Account
	a, b     *inferProcess
}

// chatBody is a chat request on model; extra adds fields.
func chatBody(model, extra string) string {
	return fmt.Sprintf(`{"model": %q, "messages": [{"role": "user", "content": "Name a color."}]%s}`, model, extra)
}

// longChat keeps a process busy for a while: 2,000 tokens of the test llama.
const longChat = `, "max_tokens": 2000, "ignore_eos": true`

// lostStream is the event the router ends a stream with when its process
// stops.
const lostStream = `data: {"error":{"code":503,"message":"The inference process serving this stream stopped; retry the request.","type":"unavailable"}}` + "\n"

// sameAnswer drops what differs between two answers to one request: the
// completion id and creation time.
var sameAnswer = regexp.MustCompile(`"id":"chatcmpl-[^"]+","object":"chat.completion.chunk","created":\d+`)

// checkInference is the inference part of the production topology: routing
// by base model, streams passed through unchanged, authentication at the
// inference process, 503s, a hung and a killed process, clean shutdown.
func checkInference(t *testing.T, c inferenceCase) {
	ctx := context.Background()
	// Wait until the API's view of the registry has both processes.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ra, _ := post(t, c.api, c.key, chatBody("trainyard/tiny-chat", `, "max_tokens": 1`), "warm-a")
		rb, _ := post(t, c.api, c.key, chatBody(testLlama, `, "max_tokens": 1`), "warm-b")
		if ra.StatusCode == 200 && rb.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chat through the API: %d and %d after 30 s", ra.StatusCode, rb.StatusCode)
		}
	}

	t.Run("routing", func(t *testing.T) {
		code, m := call(t, "POST", c.api+"/v1/preview/models", c.key, `{"project":"p","name":"chat-tiny","base_model":"trainyard/tiny-chat"}`)
		if code != 200 {
			t.Fatalf("model: %d %v", code, m)
		}
		onLlama := &trainyard.Model{AccountID: c.acct.ID, Entity: c.acct.Entity, Project: "p", Name: "chat-llama", BaseModel: testLlama}
		if err := c.db.CreateModel(ctx, onLlama); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ model, id string }{
			{"trainyard/tiny-chat", "route-base-a"}, {testLlama, "route-base-b"},
			{"wandb-artifact:///topology/p/chat-tiny", "route-model-a"}, {"wandb-artifact:///topology/p/chat-llama:step0", "route-model-b"},
		} {
			if resp, body := post(t, c.api, c.key, chatBody(tc.model, `, "max_tokens": 4`), tc.id); resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", tc.model, resp.StatusCode, body)
			}
			want, other := c.a, c.b
			if strings.HasSuffix(tc.id, "-b") {
				want, other = c.b, c.a
			}
			for deadline := time.Now().Add(5 * time.Second); !want.served(tc.id); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s (%s) was not served by %s", tc.model, tc.id, want.name)
				}
			}
			if other.served(tc.id) {
				t.Fatalf("%s (%s) reached %s too", tc.model, tc.id, other.name)
			}
		}
	})

	t.Run("stream passes through unchanged", func(t *testing.T) {
		body := chatBody("trainyard/tiny-chat", `, "stream": true, "stream_options": {"include_usage": true}, "seed": 11, "max_tokens": 24`)
		via, viaBody := post(t, c.api, c.key, body, "same-1")
		direct, directBody := post(t, c.a.url, c.key, body, "same-1")
		if via.StatusCode != 200 || direct.StatusCode != 200 || strings.Count(viaBody, "data: ") < 5 ||
			!strings.HasSuffix(viaBody, "data: [DONE]\n\n") {
			t.Fatalf("through the API %d, direct %d:\n%s", via.StatusCode, direct.StatusCode, viaBody)
		}
		if a, b := sameAnswer.ReplaceAllString(viaBody, "ID"), sameAnswer.ReplaceAllString(directBody, "ID"); a != b {
			t.Fatalf("through the API:\n%s\ndirect:\n%s", a, b)
		}
		for _, h := range []http.Header{via.Header, direct.Header} {
			h.Del("Date")       // the time of each answer
			h.Del("Connection") // of one connection: a proxy never passes it on
		}
		if fmt.Sprint(via.Header) != fmt.Sprint(direct.Header) {
			t.Fatalf("headers through the API %v, direct %v", via.Header, direct.Header)
		}
	})

	t.Run("inference authenticates", func(t *testing.T) {
		other, err := c.db.CreateAccount(ctx, "topology-other")
		if err != nil {
			t.Fatal(err)
		}
		otherKey, _, err := c.db.CreateAPIKey(ctx, other.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			key, model string
			want       int
		}{
			{"", "trainyard/tiny-chat", 401}, {"ty_not-a-key", "trainyard/tiny-chat", 401},
			{otherKey, "wandb-artifact:///topology/p/chat-tiny", 404},
		} {
			if resp, body := post(t, c.a.url, tc.key, chatBody(tc.model, `, "max_tokens": 1`), "auth"); resp.StatusCode != tc.want {
				t.Errorf("straight to infer with key %q on %s: %d %s, want %d", tc.key, tc.model, resp.StatusCode, body, tc.want)
			}
		}
	})

	noHolder := func(t *testing.T, model, id string) {
		t.Helper()
		resp, body := post(t, c.api, c.key, chatBody(model, `, "max_tokens": 1`), id)
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" ||
			!strings.Contains(body, `{"detail":"No inference process serving the base model`) {
			t.Fatalf("%s: %d %v %s, want 503 with Retry-After", model, resp.StatusCode, resp.Header, body)
		}
	}
	t.Run("503 for a base model nobody holds", func(t *testing.T) {
		orphan := &trainyard.Model{AccountID: c.acct.ID, Entity: c.acct.Entity, Project: "p", Name: "orphan", BaseModel: "acme/unheld"}
		if err := c.db.CreateModel(ctx, orphan); err != nil {
			t.Fatal(err)
		}
		noHolder(t, "wandb-artifact:///topology/p/orphan", "orphan")
	})

	t.Run("a hung process drops out", func(t *testing.T) {
		events := sse(open(t, c.api, c.key, chatBody(testLlama, `, "stream": true`+longChat), "stop-stream").Body)
		<-events // the role chunk: B is generating
		if err := syscall.Kill(c.b.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		if last := lastEvent(t, events, 20*time.Second); last != lostStream {
			t.Fatalf("the stream of a stopped process ended with %q", last)
		}
		t.Logf("the stream of a SIGSTOPped process ended %v after the stop", time.Since(stopped).Round(10*time.Millisecond))
		noHolder(t, testLlama, "stopped")
		if err := syscall.Kill(c.b.cmd.Process.Pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		resumed := time.Now()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if resp, _ := post(t, c.api, c.key, chatBody(testLlama, `, "max_tokens": 1`), "resumed"); resp.StatusCode == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the resumed process gets no traffic 20 s after SIGCONT")
			}
		}
		t.Logf("a resumed process got traffic again %v after SIGCONT", time.Since(resumed).Round(10*time.Millisecond))
	})

	t.Run("a killed process ends its calls", func(t *testing.T) {
		whole := make(chan string, 1)
		go func() {
			resp, body, err := tryPost(c.api, c.key, chatBody(testLlama, `, "n": 4`+longChat), "kill-whole")
			if err != nil {
				whole <- err.Error()
				return
			}
			whole <- fmt.Sprint(resp.StatusCode, " ", body)
		}()
		events := sse(open(t, c.api, c.key, chatBody(testLlama, `, "stream": true`+longChat), "kill-stream").Body)
		<-events
		// Both calls are generating once B's heartbeat counts their rows: 4 choices and the stream's one (the
		// process decodes 8 rows at once; past that the stream would wait in its queue).
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			procs, err := c.db.ListInference(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(procs, func(p *trainyard.InferenceProcess) bool { return p.ID == c.b.id }); i >= 0 && procs[i].InFlight >= 5 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("infer B never reported both calls' 5 rows in flight")
			}
		}
		if err := syscall.Kill(c.b.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		if last := lastEvent(t, events, 10*time.Second); last != lostStream {
			t.Fatalf("the stream of a killed process ended with %q", last)
		}
		t.Logf("the stream of a killed process ended %v after the kill", time.Since(killed).Round(time.Millisecond))
		select {
		case got := <-whole:
			if want := `503 {"detail":"The inference process serving this request stopped before it answered; retry the request."}`; got != want {
				t.Fatalf("non-streamed request of a killed process: %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the non-streamed request of a killed process got no answer within 10 s")
		}
		// Its row is still live for a moment: the refused connection decides.
		// Right after the kill, the router may also take a pooled connection
		// to it before noticing that it closed; that request never reached a
		// live process either way, and both answers are a 503 to retry.
		resp, body := post(t, c.api, c.key, chatBody(testLlama, `, "max_tokens": 1`), "killed")
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" ||
			!(strings.Contains(body, `{"detail":"No inference process serving the base model`) ||
				strings.Contains(body, `{"detail":"The inference process serving this request stopped before it answered`)) {
			t.Fatalf("after the kill: %d %v %s, want 503 with Retry-After", resp.StatusCode, resp.Header, body)
		}
	})

	t.Run("clean shutdown leaves the registry", func(t *testing.T) {
		if err := syscall.Kill(c.a.cmd.Process.Pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.a.done:
		case <-time.After(30 * time.Second):
			t.Fatal("infer A still runs 30 s after SIGTERM")
		}
		if code := c.a.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("infer A exited with %d", code)
		}
		procs, err := c.db.ListInference(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(procs, func(p *trainyard.InferenceProcess) bool { return p.ID == c.a.id }) {
			t.Fatal("infer A's row outlived its clean shutdown")
		}
		noHolder(t, "trainyard/tiny-chat", "after-shutdown")
	})
}
