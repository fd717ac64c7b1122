package jobspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
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

// tokenIDPrefix starts a logprob token that names the sampled token by its
// id, as trainyard's chat completions (and the hosted stack) write them.
const tokenIDPrefix = "token_id:"

// MaxTokenID is the largest id a "token_id:<id>" token may name: ids are
// 32-bit, whatever the vocabulary.
const MaxTokenID = math.MaxInt32

// TokenID parses "token_id:<id>". It is ok only for the one spelling
// trainyard writes, a decimal id without sign or leading zeros of at most
// MaxTokenID; CheckTokenID says what is wrong with any other.
func TokenID(tok string) (int, bool) {
	s, ok := strings.CutPrefix(tok, tokenIDPrefix)
	if !ok || s == "" || len(s) > len(strconv.Itoa(MaxTokenID)) || (s[0] == '0' && s != "0") {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.Atoi(s)
	return id, err == nil && id <= MaxTokenID
}

// CheckTokenID reports a token that claims to name a token id
// ("token_id:...") but does not name one: "token_id:-1", "token_id:0x10",
// "token_id:007" or an id past MaxTokenID would otherwise be taken as the
// token's text, and the trajectory trained on other tokens than the client
// sampled. Any other token is text, and nil.
func CheckTokenID(tok string) error {
	if !strings.HasPrefix(tok, tokenIDPrefix) {
		return nil
	}
	if _, ok := TokenID(tok); !ok {
		return fmt.Errorf("a token_id: token must name a token id in decimal, from 0 to %d, without sign or leading zeros", MaxTokenID)
	}
	return nil
}

// CheckLogprob reports a sampled token's logprob that is not a log
// probability: NaN, infinite or above 0.
func CheckLogprob(lp float64) error {
	if math.IsNaN(lp) || math.IsInf(lp, 0) || lp > 0 {
		return errors.New("a logprob must be a finite number at most 0")
	}
	return nil
}
