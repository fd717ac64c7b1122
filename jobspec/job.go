package jobspec

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Names of a job's input documents in the blob store (PutJobInput).
const (
	// InputFile is the job's request as validated: for RL it holds the
	// trajectory groups. The API stores it before it creates the job.
	InputFile = "input.json"
	// DataFile is the SFT training data, copied from training_data_url
	// once, so retries and resets train on the same bytes.
	DataFile = "data.jsonl"
)

// JobConfig is what a job row's Config holds: the request's configuration
// as received. The API writes it; Prepare reads it.
type JobConfig struct {
	// TrainingDataURL is the SFT training_data_url.
	TrainingDataURL string `json:"training_data_url,omitempty"`
	// Config is the SFT config object (or null).
	Config json.RawMessage `json:"config,omitempty"`
	// ExperimentalConfig is experimental_config (or null).
	ExperimentalConfig json.RawMessage `json:"experimental_config,omitempty"`
}

// TokenID parses "token_id:<id>".
func TokenID(tok string) (int, bool) {
	s, ok := strings.CutPrefix(tok, "token_id:")
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(s)
	return id, err == nil && id >= 0
}
