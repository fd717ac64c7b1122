package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/trainyard/trainyard/api/validate"
)

// BenchmarkParseTrajectoryGroups measures the whole validation of a log
// body of 256 ART-shaped trajectories: decode, walk, typed messages.
func BenchmarkParseTrajectoryGroups(b *testing.B) {
	var lp []string
	for i := 0; i < 32; i++ {
		lp = append(lp, fmt.Sprintf(`{"token": "token_id:%d", "logprob": -0.%04d, "bytes": [%d], "top_logprobs": []}`, i, i*37, 97+i%26))
	}
	traj := `{"messages_and_choices": [{"role": "system", "content": "You are a careful assistant."}, ` +
		`{"role": "user", "content": "What is the sum of 1234 and 4321?"}, ` +
		`{"finish_reason": "stop", "index": 0, "message": {"role": "assistant", "content": "5555"}, "logprobs": {"content": [` +
		strings.Join(lp, ", ") + `]}}], "reward": 1.0, "metrics": {"correct": true}}`
	group := `{"trajectories": [` + strings.TrimSuffix(strings.Repeat(traj+", ", 8), ", ") + `]}`
	body := []byte(`{"split": "val", "trajectory_groups": [` + strings.TrimSuffix(strings.Repeat(group+", ", 32), ", ") + `]}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		v, err := validate.Decode(body)
		if err != nil {
			b.Fatal(err)
		}
		var errs validate.Errors
		root, _ := errs.At(v, "body").Model()
		tg := parseTrajectoryGroups(root.Field("trajectory_groups"))
		if errs.Len() != 0 || tg.Count() != 256 {
			b.Fatalf("errors %v, %d trajectories", errs.List(), tg.Count())
		}
	}
}
