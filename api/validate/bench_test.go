package validate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchBody is a log body of n trajectories shaped like the ART client's:
// a few messages, a Choice with per-token logprobs, metrics and metadata.
func benchBody(n int) []byte {
	var lp []string
	for i := 0; i < 32; i++ {
		lp = append(lp, fmt.Sprintf(`{"token": "token_id:%d", "logprob": -0.%04d, "bytes": [%d], "top_logprobs": []}`, i, i*37, 97+i%26))
	}
	traj := `{"messages_and_choices": [{"role": "system", "content": "You are a careful assistant."}, ` +
		`{"role": "user", "content": "What is the sum of 1234 and 4321? Answer with the number only."}, ` +
		`{"finish_reason": "stop", "index": 0, "message": {"role": "assistant", "content": "5555"}, "logprobs": {"content": [` +
		strings.Join(lp, ", ") + `]}}], "tools": null, "reward": 1.0, "metrics": {"correct": true, "len": 4}, ` +
		`"metadata": {"task": "add", "seed": 7}, "logs": []}`
	var groups []string
	for g := 0; g < n/8; g++ {
		groups = append(groups, `{"trajectories": [`+strings.TrimSuffix(strings.Repeat(traj+", ", 8), ", ")+`]}`)
	}
	return []byte(`{"split": "val", "trajectory_groups": [` + strings.Join(groups, ", ") + `]}`)
}

func BenchmarkDecode(b *testing.B) {
	body := benchBody(256)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibUnmarshal is the baseline: encoding/json into any.
func BenchmarkStdlibUnmarshal(b *testing.B) {
	body := benchBody(256)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			b.Fatal(err)
		}
	}
}
